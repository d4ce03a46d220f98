//! TQ-001 … TQ-005: the request queue.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zoo_core::engine::queue::RequestQueue;

#[test]
fn tq_001_enqueue_from_many_threads_loses_nothing() {
    let queue = Arc::new(RequestQueue::new());
    let producers: Vec<_> = (0..8)
        .map(|t| {
            let q = queue.clone();
            thread::spawn(move || {
                for i in 0..1000 {
                    q.push((t, i)).unwrap();
                }
            })
        })
        .collect();
    producers.into_iter().for_each(|p| p.join().unwrap());
    let mut seen: Vec<(i32, i32)> = std::iter::from_fn(|| queue.try_pop()).collect();
    assert_eq!(seen.len(), 8000);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8000, "no item duplicated or corrupted");
    // Each producer's items stay in its own order.
}

#[test]
fn tq_002_single_consumer_gets_fifo_order() {
    let queue = RequestQueue::new();
    for i in 0..100 {
        queue.push(i).unwrap();
    }
    let out: Vec<i32> = (0..100).map(|_| queue.pop().unwrap()).collect();
    assert_eq!(out, (0..100).collect::<Vec<_>>());
}

#[test]
fn tq_003_concurrent_enqueue_and_dequeue_without_deadlock() {
    let queue = Arc::new(RequestQueue::new());
    let consumer = {
        let q = queue.clone();
        thread::spawn(move || {
            let mut last = [-1i64; 4];
            let mut count = 0;
            while let Some((p, i)) = q.pop() {
                let p: usize = p;
                assert!(i > last[p], "per-producer FIFO order");
                last[p] = i;
                count += 1;
            }
            count
        })
    };
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let q = queue.clone();
            thread::spawn(move || {
                for i in 0..5000i64 {
                    q.push((p, i)).unwrap();
                }
            })
        })
        .collect();
    producers.into_iter().for_each(|p| p.join().unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while queue.depth() > 0 {
        assert!(Instant::now() < deadline, "consumer stalled");
        thread::sleep(Duration::from_millis(1));
    }
    queue.close();
    assert_eq!(consumer.join().unwrap(), 20_000);
}

#[test]
fn tq_004_depth_reflects_pending_requests() {
    let queue = RequestQueue::new();
    for i in 0..5 {
        queue.push(i).unwrap();
        assert_eq!(queue.depth(), i + 1);
    }
    queue.pop();
    queue.pop();
    assert_eq!(queue.depth(), 3);
    let rest = queue.close();
    assert_eq!(rest, vec![2, 3, 4]);
    assert_eq!(queue.depth(), 0);
    assert!(queue.push(9).is_err(), "a closed queue refuses work");
}

#[test]
fn tq_005_depth_zero_when_empty_and_does_not_block() {
    let queue: RequestQueue<u8> = RequestQueue::new();
    let started = Instant::now();
    assert_eq!(queue.depth(), 0);
    assert!(queue.try_pop().is_none());
    // Both take microseconds; a call that blocked would never return. The
    // bound leaves room for a test thread descheduled on a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(1));
}
