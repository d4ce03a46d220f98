// Tool execution through Node, on the mock: `exclusive` and `timeoutMs` in
// the tool definition, their argument checks, and async tools that overlap
// under `toolExecution: 'parallel'`. Concurrency is proven by rendezvous:
// every call of a reply waits for all the others to have started, which
// only calls that run at once can do; nothing here depends on timing.
import assert from 'node:assert/strict'
import test from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'

import { zk, mockAgent, toolCall } from './helpers.mjs'

const { ZooError, ErrorCode } = zk
// Only a broken test waits this long.
const PROMPTLY_MS = 30_000
const NUMBERED = { type: 'object', properties: { n: { type: 'integer' } } }
const TIMEOUT_RULE = 'invalid argument: the timeout of tool `slow` must be a whole number of milliseconds ' +
  'from 0 to 9223372036854775807 (0 or null for no limit), got '

const calls = (name, count) => Array.from({ length: count }, (_, n) => toolCall(name, { n })).join('')

/** A meeting point for `count` calls: each waits until all have arrived (or PROMPTLY_MS passed). */
function rendezvous(count) {
  let arrived = 0
  let open
  const everyone = new Promise((resolve) => { open = resolve })
  return async () => {
    arrived += 1
    if (arrived === count) open()
    const late = sleep(PROMPTLY_MS, undefined, { ref: false }).then(() => {
      throw new Error(`only ${arrived} of ${count} calls arrived`)
    })
    await Promise.race([everyone, late])
  }
}

function expectInvalid(register, message) {
  assert.throws(register, (error) => {
    assert.ok(error instanceof ZooError)
    assert.equal(error.code, ErrorCode.INVALID_ARGUMENT)
    assert.equal(error.message, message)
    return true
  })
}

test('a bad timeoutMs is an invalid argument in the shared words', async () => {
  const agent = await mockAgent([])
  for (const [timeoutMs, got] of [
    [-5, '-5'], [1.5, '1.5'], [NaN, 'NaN'], [Infinity, 'Infinity'], [-Infinity, '-Infinity'],
    [true, 'true'], ['500', '"500"'], [() => 500, 'an object'], [[500], 'an array'],
  ]) {
    expectInvalid(() => agent.registerTool({ name: 'slow', timeoutMs }, () => 1), TIMEOUT_RULE + got)
  }
  for (const [exclusive, got] of [['yes', '"yes"'], [1, '1'], [{}, 'an object']]) {
    expectInvalid(
      () => agent.registerTool({ name: 'slow', exclusive }, () => 1),
      `invalid argument: the exclusive flag of tool \`slow\` must be true or false, got ${got}`,
    )
  }
  assert.equal((await agent.chat('hi')).text, 'echo: hi')
  await agent.close()
})

test('null, undefined and 0 mean no limit', async () => {
  const agent = await mockAgent([toolCall('a', {}) + toolCall('b', {}) + toolCall('c', {}), 'done'])
  agent.registerTool({ name: 'a', timeoutMs: null, exclusive: null }, () => 'A')
  agent.registerTool({ name: 'b', timeoutMs: undefined }, () => 'B')
  agent.registerTool({ name: 'c', timeoutMs: 0, exclusive: false }, () => 'C')
  const response = await agent.chat('go')
  assert.deepEqual(response.toolCalls.map((c) => c.result), ['A', 'B', 'C'])
  await agent.close()
})

test('a call past its timeoutMs is a tool error and the chat goes on', async () => {
  const agent = await mockAgent([toolCall('slow', {}), 'Gave up.'])
  // Held until the chat is over: only the time limit can answer it.
  let release
  const held = new Promise((resolve) => { release = resolve })
  agent.registerTool({ name: 'slow', timeoutMs: 50 }, async () => {
    await held
    return 'late'
  })
  let response
  try {
    response = await agent.chat('go')
  } finally {
    release()
  }
  assert.equal(response.text, 'Gave up.')
  assert.equal(response.toolCalls[0].error, 'tool `slow` failed: it did not finish within 50 ms')
  assert.equal(response.toolErrors[0].kind, 'tool_handler_failed')
  assert.equal((await agent.chat('again')).text, 'echo: again')
  await agent.close()
})

test('async tools overlap under parallel', async () => {
  const agent = await mockAgent([calls('meet', 4), 'Met.'], { toolExecution: 'parallel' })
  const meet = rendezvous(4)
  agent.registerTool({ name: 'meet', parameters: NUMBERED }, async ({ n }) => {
    await meet()
    return n
  })
  const response = await agent.chat('go')
  assert.deepEqual(response.toolErrors, [])
  assert.deepEqual(response.toolCalls.map((c) => c.result), [0, 1, 2, 3])
  await agent.close()
})

test('an exclusive tool runs alone under parallel', async () => {
  const reply = [0, 1].map((n) => toolCall('meet', { n })).join('') + toolCall('write', {}) +
    [2, 3].map((n) => toolCall('meet', { n })).join('')
  const agent = await mockAgent([reply, 'Done.'], { toolExecution: 'parallel' })
  const pairs = [rendezvous(2), rendezvous(2)]
  let running = 0
  const seen = []
  agent.registerTool({ name: 'meet', parameters: NUMBERED }, async ({ n }) => {
    running += 1
    await pairs[n < 2 ? 0 : 1]()
    running -= 1
    return n
  })
  agent.registerTool({ name: 'write', exclusive: true }, async () => {
    seen.push(running)
    return 'written'
  })
  const events = []
  const response = await agent.chat('go', { onEvent: (e) => events.push(e) })
  assert.deepEqual(response.toolErrors, [])
  assert.deepEqual(seen, [0])
  assert.deepEqual(response.toolCalls.map((c) => c.result), [0, 1, 'written', 2, 3])
  const steps = events.filter((e) => e.type.startsWith('tool_call_')).map((e) => `${e.type.slice(10)} ${e.id}`)
  assert.deepEqual(steps, [
    'started call_1', 'started call_2', 'finished call_1', 'finished call_2',
    'started call_3', 'finished call_3',
    'started call_4', 'started call_5', 'finished call_4', 'finished call_5',
  ])
  await agent.close()
})
