// Tool contexts through Node: a tool handler's second argument has the
// call's id, an AbortSignal that aborts on the tool's timeout and on the
// chat's stop, and update/progress reports that become events of the call,
// in order; a context kept past its call reports nothing; bad reports throw.
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk, toolCall, mockAgent } from './helpers.mjs'

const { ErrorCode, ToolContext } = zk

/** Generous bound for a loaded machine; only a broken engine waits it out. */
const PROMPTLY_MS = 30_000

/** Resolves true when `signal` aborts, false after `ms`. */
function aborted(signal, ms) {
  if (signal.aborted) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      resolve(true)
    }, { once: true })
  })
}

const reports = (events) => events
  .filter((e) => e.type === 'tool_call_update' || e.type === 'tool_call_progress')
  .map((e) => [e.type, e.update ?? e.text])

test('reports become events between the call start and finish', async () => {
  const agent = await mockAgent([toolCall('fetch', { url: 'https://example.com' }), 'It is up.'])
  let seen
  agent.registerTool({ name: 'fetch', parameters: { type: 'object', properties: { url: { type: 'string' } } } }, async (args, ctx) => {
    assert.ok(ctx instanceof ToolContext)
    seen = { callId: ctx.callId, aborted: ctx.signal.aborted }
    seen.taken = [ctx.progress('connecting'), ctx.update({ bytes_read: 512 }), ctx.progress('done')]
    return { status: 200 }
  })
  const events = []
  const response = await agent.chat('Is it up?', { onEvent: (e) => events.push(e) })
  assert.deepEqual(response.toolCalls[0].result, { status: 200 })
  assert.deepEqual(seen, { callId: 'call_1', aborted: false, taken: [true, true, true] })
  const types = events.map((e) => e.type)
  const start = types.indexOf('tool_call_started')
  const finish = types.indexOf('tool_call_finished')
  assert.deepEqual(types.slice(start + 1, finish), ['tool_call_progress', 'tool_call_update', 'tool_call_progress'])
  // The tool's own keys stay as they are.
  assert.deepEqual(reports(events), [['tool_call_progress', 'connecting'], ['tool_call_update', { bytes_read: 512 }], ['tool_call_progress', 'done']])
  for (const e of events.slice(start + 1, finish)) assert.deepEqual([e.id, e.name, typeof e.seq], ['call_1', 'fetch', 'number'])
  await agent.close()
})

test('the timeout aborts the signal and later reports are dropped', async () => {
  const agent = await mockAgent([toolCall('slow', {}), 'Gave up.'])
  let done
  const finished = new Promise((resolve) => { done = resolve })
  agent.registerTool({ name: 'slow', timeoutMs: 300 }, async (args, ctx) => {
    const wasAborted = await aborted(ctx.signal, PROMPTLY_MS)
    done({ wasAborted, reason: ctx.signal.reason, late: ctx.progress('too late') })
    return 'ignored'
  })
  const events = []
  const response = await agent.chat('Go', { onEvent: (e) => events.push(e) })
  assert.equal(response.toolCalls[0].error, 'tool `slow` failed: it did not finish within 300 ms')
  const seen = await finished
  assert.equal(seen.wasAborted, true)
  assert.equal(seen.late, false)
  assert.equal(seen.reason.code, ErrorCode.CANCELLED)
  assert.deepEqual(reports(events), [])
  await agent.close()
})

test('the stop aborts the signal', async () => {
  const agent = await mockAgent([toolCall('wait', {})])
  let done
  const finished = new Promise((resolve) => { done = resolve })
  agent.registerTool({ name: 'wait' }, async (args, ctx) => {
    const { signal } = ctx
    agent.stop()
    done(await aborted(signal, PROMPTLY_MS))
    return 'ignored'
  })
  const response = await agent.chat('Go')
  assert.equal(response.stopReason, 'cancelled')
  assert.equal(await finished, true)
  assert.equal((await agent.chat('again')).text, 'echo: again')
  await agent.close()
})

test('a signal first read after the cancel is already aborted', async () => {
  const agent = await mockAgent([toolCall('late', {})])
  let done
  const finished = new Promise((resolve) => { done = resolve })
  let release
  const gate = new Promise((resolve) => { release = resolve })
  agent.registerTool({ name: 'late', timeoutMs: 100 }, async (args, ctx) => {
    await gate
    done(ctx.signal.aborted)
    return 'ignored'
  })
  const response = await agent.chat('Go')
  assert.match(response.toolCalls[0].error, /did not finish within 100 ms/)
  release()
  assert.equal(await finished, true)
  await agent.close()
})

test('a context kept past its call reports nothing, and bad reports throw', async () => {
  const agent = await mockAgent([toolCall('keep', {}), 'Kept.'])
  let kept
  const thrown = []
  agent.registerTool({ name: 'keep' }, (args, ctx) => {
    kept = ctx
    for (const bad of [() => ctx.update(undefined), () => ctx.update(() => 1), () => ctx.progress(42)]) {
      try {
        bad()
      } catch (error) {
        thrown.push(error.code)
      }
    }
    return 'ok'
  })
  const events = []
  await agent.chat('Go', { onEvent: (e) => events.push(e) })
  assert.deepEqual(thrown, [ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT])
  assert.equal(kept.update({ late: true }), false)
  assert.equal(kept.progress('late'), false)
  assert.equal(kept.signal.aborted, false)
  assert.deepEqual(reports(events), [])
  assert.throws(() => new ToolContext(), TypeError)
  await agent.close()
})
