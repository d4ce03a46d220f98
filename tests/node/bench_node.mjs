// Node binding benchmarks (run by scripts/bench-node, not by node --test).
//
// 1. Per-token callback cost: a zero-delay mock streams N tokens; chats with
//    a no-op onToken against chats without, interleaved; the difference per
//    token is what delivering a token to JavaScript costs (the inference
//    thread queues it, the JS thread drains the queue in batches).
// 2. Per-event cost: the same mock chat (one reply with EVENT_CALLS calls to
//    tools that do not exist, each settled at once with three events, then a
//    final reply: 3 * EVENT_CALLS + 6 events) with an onEvent that receives
//    every event against none, interleaved; the difference per event,
//    beside the token callback's cost of 1.
// 3. Generation throughput through Node against the Rust engine: the same
//    greedy generation on the default model (temperature 0, 2 threads, 128
//    tokens), in this process streaming to a JS onToken, and in a Rust
//    process (examples/rust/generate.rs), interleaved (Node first in even
//    rounds, Rust first in odd ones): ratio of the medians and median of the
//    per-round ratios.
// 4. node-llama-cpp (npm, its own prebuilt llama.cpp) on the same model,
//    prompt, threads and token count, when it is installed next to the
//    package: generation tokens/s from its first token to its last.
//
//   node tests/node/bench_node.mjs MODEL RUST_GENERATE_BINARY
//   node tests/node/bench_node.mjs --events     (1 and 2 only: no model)
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { zk, CONSUMER } from './helpers.mjs'

const N_TOKENS = 100_000
const EVENT_CALLS = 100
const EVENT_ROUNDS = 61
const ROUNDS = 15
const THROUGHPUT_ROUNDS = Number(process.env.ZOO_BENCH_ROUNDS ?? 15)
const PROMPT = 'Write a long story about a lighthouse keeper and the sea.'
const MAX_TOKENS = 128
const THREADS = 2

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

async function callbackCost() {
  const reply = Array(N_TOKENS).fill('tok').join(' ')
  const plain = []
  const streamed = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const [onToken, out] of [[undefined, plain], [() => {}, streamed]]) {
      const agent = await zk.Agent.create({ provider: { type: 'mock', replies: [reply] } })
      const started = performance.now()
      let delivered = 0
      const response = await agent.chat('go', { onToken: onToken && ((t) => { delivered++; onToken(t) }) })
      out.push(performance.now() - started)
      if (onToken && delivered !== response.usage.completionTokens) throw new Error('tokens were lost')
      await agent.close()
    }
  }
  const perToken = ((median(streamed) - median(plain)) / N_TOKENS) * 1e6
  console.log(
    `callback: ${N_TOKENS} tokens, median ${median(plain).toFixed(1)} ms without onToken, ` +
      `${median(streamed).toFixed(1)} ms with a JS onToken: ${perToken.toFixed(0)} ns per token callback ` +
      `(all ${N_TOKENS} delivered before the Promise resolved)`,
  )
  return perToken
}

async function eventCost(perTokenNs) {
  const calls = Array.from({ length: EVENT_CALLS }, (_, i) =>
    `<tool_call>\n${JSON.stringify({ name: `missing_${i}`, arguments: { n: i } })}\n</tool_call>`).join('')
  const events = 3 * EVENT_CALLS + 6
  const plain = []
  const observed = []
  for (let round = 0; round < EVENT_ROUNDS; round++) {
    const order = [[undefined, plain], [() => {}, observed]]
    for (const [onEvent, out] of round % 2 === 0 ? order : order.reverse()) {
      const agent = await zk.Agent.create({ provider: { type: 'mock', replies: [calls, 'done'] } })
      // With no tool at all the reply would be plain text.
      agent.registerTool({ name: 'real', description: 'A tool', parameters: { type: 'object' } }, () => 1)
      let seen = 0
      const started = performance.now()
      const response = await agent.chat('go', { onEvent: onEvent && ((e) => { seen++; onEvent(e) }) })
      out.push(performance.now() - started)
      if (response.text !== 'done' || response.toolCalls.length !== EVENT_CALLS) throw new Error('the chat went wrong')
      if (onEvent && seen !== events) throw new Error(`${seen} events, not ${events}`)
      await agent.close()
    }
  }
  const paired = median(observed.map((o, i) => ((o - plain[i]) / events) * 1e6))
  const perEvent = ((median(observed) - median(plain)) / events) * 1e6
  console.log(
    `events: ${events} per chat, median ${median(plain).toFixed(2)} ms without onEvent, ` +
      `${median(observed).toFixed(2)} ms with a JS onEvent (${EVENT_ROUNDS} interleaved rounds): ` +
      `${perEvent.toFixed(0)} ns per event (median of per-round differences ${paired.toFixed(0)} ns), ` +
      `${(perEvent - perTokenNs).toFixed(0)} ns more than a token callback`,
  )
}

async function throughput(modelPath, rustBinary) {
  const node = []
  const rust = []
  const model = await zk.Model.load(modelPath)
  const runNode = async () => {
    const agent = await zk.Agent.create({ model, temperature: 0, threads: THREADS, maxTokens: MAX_TOKENS })
    const response = await agent.chat(PROMPT, { onToken: () => {} })
    node.push(response.metrics.tokensPerSecond)
    await agent.close()
  }
  const runRust = async () => {
    const out = execFileSync(rustBinary, [modelPath, PROMPT, String(MAX_TOKENS)], { encoding: 'utf8' })
    rust.push(JSON.parse(out.trim().split('\n').at(-1)).generation_tps)
  }
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    for (const run of round % 2 === 0 ? [runNode, runRust] : [runRust, runNode]) await run()
  }
  const ratios = node.map((n, i) => n / rust[i])
  console.log(
    `generation: Node ${median(node).toFixed(1)} tokens/s, Rust ${median(rust).toFixed(1)} tokens/s ` +
      `(medians of ${THROUGHPUT_ROUNDS} interleaved runs): ratio ${(median(node) / median(rust)).toFixed(3)}, ` +
      `median of per-round ratios ${median(ratios).toFixed(3)}`,
  )
  return median(node)
}

async function nodeLlamaCpp(modelPath, zooMedian) {
  const entry = path.join(CONSUMER, 'node_modules', 'node-llama-cpp', 'dist', 'index.js')
  if (!existsSync(entry)) {
    console.log('node-llama-cpp: not installed next to the package (scripts/bench-node installs it)')
    return
  }
  const { getLlama, LlamaChatSession } = await import(pathToFileURL(entry).href)
  const llama = await getLlama({ gpu: false, build: 'never' })
  const model = await llama.loadModel({ modelPath })
  const rates = []
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    const context = await model.createContext({ contextSize: 4096, threads: THREADS })
    const session = new LlamaChatSession({ contextSequence: context.getSequence() })
    let tokens = 0
    let first = 0
    let last = 0
    await session.prompt(PROMPT, {
      maxTokens: MAX_TOKENS,
      temperature: 0,
      onToken: (chunk) => {
        const now = performance.now()
        if (!first) first = now
        else tokens += chunk.length
        last = now
      },
    })
    rates.push((tokens * 1000) / (last - first))
    await context.dispose()
  }
  await model.dispose()
  const version = (await import(pathToFileURL(path.join(CONSUMER, 'node_modules', 'node-llama-cpp', 'package.json')).href, { with: { type: 'json' } })).default.version
  console.log(
    `node-llama-cpp ${version} (its prebuilt llama.cpp, ${THREADS} threads, greedy, ${MAX_TOKENS} tokens): ` +
      `${median(rates).toFixed(1)} tokens/s (median of ${THROUGHPUT_ROUNDS}); zoo-keeper/node-llama-cpp ${(zooMedian / median(rates)).toFixed(3)}`,
  )
}

const [modelPath, rustBinary] = process.argv.slice(2)
const eventsOnly = modelPath === '--events'
if (!eventsOnly && (!modelPath || !rustBinary)) {
  console.error('usage: node tests/node/bench_node.mjs MODEL RUST_GENERATE_BINARY | --events')
  process.exit(2)
}
const perTokenNs = await callbackCost()
await eventCost(perTokenNs)
if (!eventsOnly) {
  const zooMedian = await throughput(modelPath, rustBinary)
  await nodeLlamaCpp(modelPath, zooMedian)
}
