// The reliability issue's hostile and concurrent cases through Node, on the
// mock: each asserts the exact code and message, and that the agent answers
// afterwards.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { zk, mockAgent, toolCall } from './helpers.mjs'

const { ZooError, ErrorCode } = zk
const EMPTY = { type: 'object', properties: {} }

/** Every call answered once, ids unique, no trailing user message. */
function assertConsistent(history) {
  const pending = []
  const seen = new Set()
  for (const m of history) {
    if (m.role === 'assistant') {
      assert.deepEqual(pending, [], 'unanswered calls')
      for (const call of m.toolCalls ?? []) {
        assert.ok(!seen.has(call.id), `id ${call.id} reused`)
        seen.add(call.id)
        pending.push(call.id)
      }
    } else if (m.role === 'tool') {
      const at = pending.indexOf(m.toolCallId)
      assert.ok(at >= 0, `result for ${m.toolCallId} answers no call`)
      pending.splice(at, 1)
    } else if (m.role === 'user') {
      assert.deepEqual(pending, [])
    }
  }
  assert.deepEqual(pending, [])
  const rest = history.filter((m) => m.role !== 'system')
  assert.ok(rest.length === 0 || rest.at(-1).role !== 'user', 'history ends on a user message')
}

test('an AbortSignal fired at once, again and again, never breaks the history', async () => {
  const replies = []
  for (let i = 0; i < 100; i++) replies.push(toolCall('ping', {}), 'pong and some more words')
  const agent = await mockAgent(replies)
  agent.registerTool({ name: 'ping', parameters: EMPTY }, () => 'pong')
  for (let i = 0; i < 100; i++) {
    const controller = new AbortController()
    const chat = agent.chat(`question ${i}`, { signal: controller.signal })
    if (i % 2 === 0) controller.abort()
    else setImmediate(() => controller.abort())
    await chat.then(
      (r) => assert.ok(['stop', 'cancelled'].includes(r.stopReason)),
      (e) => assert.equal(e.code, ErrorCode.CANCELLED),
    )
  }
  assertConsistent(agent.history())
  assert.equal((await agent.chat('last')).stopReason, 'stop')
  await agent.close()
})

test('a stop during a pending async tool ends the chat without waiting for it', async () => {
  const agent = await mockAgent([toolCall('wait', {})])
  let release
  let started
  const startedP = new Promise((resolve) => (started = resolve))
  agent.registerTool({ name: 'wait', parameters: EMPTY }, () => {
    started()
    return new Promise((resolve) => (release = resolve))
  })
  const chat = agent.chat('go')
  await startedP
  agent.stop()
  const response = await chat
  assert.equal(response.stopReason, 'cancelled')
  assert.equal(response.toolCalls[0].error, 'the chat was stopped while `wait` was running; its result was discarded')
  assertConsistent(agent.history())
  release('late')
  assert.equal((await agent.chat('next')).text, 'echo: next')
  await agent.close()
})

test('an onToken that throws rejects the chat and leaves the history as it was', async () => {
  // The tokens reach JS after the engine made them: a 30 s reply (1 ms a
  // word) keeps the chat running while the first token's failure comes
  // back, however busy the machine; the abort ends it at once.
  const words = Array.from({ length: 30000 }, (_, i) => `w${i}`).join(' ')
  const agent = await mockAgent(['first answer', words], {}, 1)
  await agent.chat('one')
  const before = agent.history()
  await assert.rejects(
    agent.chat('two', {
      onToken: () => {
        throw new RangeError('boom')
      },
    }),
    { name: 'RangeError', message: 'boom' },
  )
  assert.deepEqual(agent.history(), before)
  assert.equal((await agent.chat('three')).text, 'echo: three')
  await agent.close()
})

test('tool registrations that cannot work are refused at once with a ZooError', async () => {
  const agent = await mockAgent([])
  for (const [handler, got] of [[null, 'null'], ['text', 'string'], [42, 'number']]) {
    assert.throws(() => agent.registerTool({ name: 't', parameters: EMPTY }, handler), (e) => {
      assert.ok(e instanceof ZooError)
      assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
      assert.equal(e.message, `invalid argument: the handler of tool \`t\` must be a function, got ${got}`)
      return true
    })
  }
  const circular = { type: 'object' }
  circular.self = circular
  assert.throws(() => agent.registerTool({ name: 't', parameters: circular }, () => 1), (e) => {
    assert.ok(e instanceof ZooError, `${e}`)
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(e.message, /^invalid argument: the parameters of tool `t` cannot be written as JSON: /)
    return true
  })
  assert.throws(() => agent.registerTool({ name: 't', parameters: { type: 'object', n: 10n } }, () => 1), { code: ErrorCode.INVALID_ARGUMENT })
  assert.equal((await agent.chat('fine')).text, 'echo: fine')
  await agent.close()
})

test('maxTokens 0 keeps the agent limit, -1 is refused, a huge one is the room left', async () => {
  const agent = await mockAgent([], { maxTokens: 2 })
  const r = await agent.chat('one two three four', { maxTokens: 0 })
  assert.equal(r.stopReason, 'length')
  assert.equal(r.usage.completionTokens, 2)
  await assert.rejects(agent.chat('x', { maxTokens: -1 }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: 'invalid argument: `maxTokens` must be an integer from 0 to 4294967295, got -1',
  })
  await agent.close()
  const huge = await mockAgent(['fine'], { maxTokens: 4294967295 })
  huge.registerTool({ name: 'ping', parameters: EMPTY }, () => 'pong')
  assert.equal((await huge.chat('hi')).text, 'fine')
  assert.equal((await huge.chat('hello', { maxTokens: 4294967295 })).text, 'echo: hello')
  await huge.close()
})

test('a restored history that cannot be answered is refused; ids stay unique', async () => {
  const agent = await mockAgent([toolCall('ping', {}), 'ok'])
  agent.registerTool({ name: 'ping', parameters: EMPTY }, () => 'pong')
  await assert.rejects(
    agent.setHistory([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'ping', arguments: {} }] },
    ]),
    (e) => {
      assert.equal(e.code, ErrorCode.INVALID_MESSAGE_SEQUENCE)
      assert.match(e.message, /the history ends with tool call `call_1`, which has no result/)
      return true
    },
  )
  await agent.setHistory([
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'ping', arguments: {} }] },
    { role: 'tool', content: 'pong', toolCallId: 'call_1', name: 'ping' },
    { role: 'assistant', content: 'ok' },
  ])
  const r = await agent.chat('again')
  assert.equal(r.toolCalls[0].id, 'call_2')
  assertConsistent(agent.history())
  await agent.close()
})
