// The Node package on the mock provider: API, ordering, tools, cancellation,
// errors and process exit.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { zk, mockAgent, toolCall, ADD } from './helpers.mjs'

const { ZooError, ErrorCode } = zk

test('chat streams tokens and resolves to a typed response', async () => {
  const agent = await mockAgent(['Hello there, world'])
  const tokens = []
  const events = []
  const response = await agent.chat('hi', { onToken: (t) => tokens.push(t), onEvent: (e) => events.push(e) })
  assert.equal(response.text, 'Hello there, world')
  assert.equal(tokens.join(''), response.text)
  assert.ok(tokens.length >= 3)
  assert.equal(response.stopReason, 'stop')
  assert.deepEqual(response.toolCalls, [])
  assert.equal(response.usage.completionTokens, tokens.length)
  assert.equal(typeof response.metrics.totalMs, 'number')
  assert.deepEqual(
    events.map(({ type, chatId, seq }) => ({ type, chatId, seq })),
    ['chat_started', 'turn_started', 'turn_finished', 'chat_finished'].map((type, seq) => ({ type, chatId: 1, seq })),
  )
  assert.ok(events.every((e) => e.agentId === agent.id))
  assert.deepEqual(events[3].usage, response.usage)
  assert.equal(await agent.close(), true)
  assert.equal(agent.closed, true)
})

test('thinking streams apart from the text', async () => {
  const reply = '<think>Two plus two is four.</think>\n\nThe answer is 4.'
  const agent = await mockAgent([reply, reply])
  const tokens = []
  const thinking = []
  const response = await agent.chat('2+2?', { onToken: (t) => tokens.push(t), onThinking: (t) => thinking.push(t) })
  assert.equal(response.text, 'The answer is 4.')
  assert.equal(response.thinking, 'Two plus two is four.')
  assert.equal(thinking.join('').trim(), 'Two plus two is four.')
  assert.equal(tokens.join('').trim(), 'The answer is 4.')
  assert.equal(agent.history().at(-1).thinking, 'Two plus two is four.')
  const items = []
  const stream = agent.stream('again')
  for await (const item of stream) items.push(item)
  assert.equal(items.filter((i) => i.type === 'thinking').map((i) => i.text).join('').trim(), 'Two plus two is four.')
  assert.ok(!items.filter((i) => i.type === 'token').map((i) => i.text).join('').includes('think'))
  assert.equal((await stream.response).thinking, 'Two plus two is four.')
  assert.equal((await agent.chat('plain')).thinking, undefined)
  await agent.close()
})

test('every onToken runs before the Promise resolves (10k tokens)', async () => {
  const count = 10_000
  const agent = await mockAgent([Array.from({ length: count }, (_, i) => `t${i}`).join(' ')])
  let seen = 0
  let text = ''
  const response = await agent.chat('go', {
    onToken: (t) => {
      seen++
      text += t
    },
  })
  assert.equal(seen, count)
  assert.equal(text, response.text)
  assert.equal(response.usage.completionTokens, count)
  await agent.close()
})

test('a sync JS tool is called with valid arguments and its result goes to the model', async () => {
  const agent = await mockAgent([toolCall('add', { a: 2, b: 3 }), 'The sum is 5.'])
  const calls = []
  agent.registerTool(ADD, (args) => {
    calls.push(args)
    return args.a + args.b
  })
  const events = []
  const response = await agent.chat('What is 2 + 3?', { onEvent: (e) => events.push(e.type) })
  assert.deepEqual(calls, [{ a: 2, b: 3 }])
  assert.equal(response.toolCalls.length, 1)
  assert.deepEqual(response.toolCalls[0].arguments, { a: 2, b: 3 })
  assert.equal(response.toolCalls[0].result, 5)
  assert.equal(response.text, 'The sum is 5.')
  assert.deepEqual(events, [
    'chat_started', 'turn_started', 'turn_finished', 'tool_call_started', 'tool_call_finished',
    'turn_started', 'turn_finished', 'chat_finished',
  ])
  const tool = agent.history().find((m) => m.role === 'tool')
  assert.equal(tool.content, '5')
  await agent.close()
})

test('an async JS tool is awaited; objects round-trip', async () => {
  const agent = await mockAgent([toolCall('weather', { city: 'Paris' }), 'Mild.'])
  agent.registerTool(
    { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    async ({ city }) => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      return { city, temperatureCelsius: 17, sky: ['clear'] }
    },
  )
  const response = await agent.chat('Weather in Paris?')
  assert.deepEqual(response.toolCalls[0].result, { city: 'Paris', temperatureCelsius: 17, sky: ['clear'] })
  assert.ok(response.toolCalls[0].durationMs >= 15)
  await agent.close()
})

test('a throwing, a rejecting and an unserializable tool become tool errors the model sees', async () => {
  for (const [handler, expected] of [
    [() => { throw new RangeError('boom') }, 'RangeError: boom'],
    [async () => { throw new Error('async boom') }, 'Error: async boom'],
    [() => Promise.reject('plain string'), 'plain string'],
    [() => 10n, 'TypeError'],
  ]) {
    const agent = await mockAgent([toolCall('add', { a: 1, b: 2 }), 'Sorry, the tool failed.'])
    agent.registerTool(ADD, handler)
    const response = await agent.chat('add')
    assert.equal(response.text, 'Sorry, the tool failed.')
    assert.equal(response.toolErrors.length, 1)
    assert.equal(response.toolErrors[0].kind, 'tool_handler_failed')
    assert.match(response.toolErrors[0].message, new RegExp(expected))
    assert.match(response.toolCalls[0].error, new RegExp(expected))
    const tool = agent.history().find((m) => m.role === 'tool')
    assert.equal(tool.isError, true)
    assert.match(tool.content, new RegExp(expected))
    await agent.close()
  }
})

// The long replies below take 20 s or more, far longer than any bound: only
// the cancellation under test ends them, whenever the busy JS thread gets to
// it.

test('an AbortSignal cancels the chat: rejects with code 8 and the partial reply', async () => {
  const agent = await mockAgent([Array(10_000).fill('word').join(' '), 'next'], {}, 2)
  const controller = new AbortController()
  let tokens = 0
  const started = Date.now()
  const chat = agent.chat('long', {
    signal: controller.signal,
    onToken: () => {
      if (++tokens === 5) controller.abort(new Error('enough'))
    },
  })
  await assert.rejects(chat, (error) => {
    assert.ok(error instanceof ZooError)
    assert.equal(error.code, ErrorCode.CANCELLED)
    assert.equal(error.codeName, 'cancelled')
    assert.equal(error.cause.message, 'enough')
    assert.equal(error.response.stopReason, 'cancelled')
    assert.ok(error.response.usage.completionTokens < 2000)
    return true
  })
  // Milliseconds when idle; the 20 s reply would run far past this.
  assert.ok(Date.now() - started < 2000)
  assert.ok(tokens < 2000)
  // The agent takes the next chat normally.
  assert.equal((await agent.chat('again')).text, 'next')

  const aborted = AbortSignal.abort()
  await assert.rejects(agent.chat('never', { signal: aborted }), { code: ErrorCode.CANCELLED })
  await agent.close()
})

test('stop() ends the chat as cancelled', async () => {
  const agent = await mockAgent([Array(10_000).fill('word').join(' ')], {}, 2)
  const chat = agent.chat('long', {
    onToken: () => agent.stop(),
  })
  const response = await chat
  assert.equal(response.stopReason, 'cancelled')
  assert.ok(response.usage.completionTokens < 2000)
  await agent.close()
})

test('stream() yields tokens and events in order, then the response', async () => {
  const agent = await mockAgent([toolCall('add', { a: 4, b: 5 }), 'It is 9.'])
  agent.registerTool(ADD, ({ a, b }) => a + b)
  const stream = agent.stream('4 + 5?')
  const items = []
  for await (const item of stream) items.push(item)
  const types = items.map((i) => i.type)
  assert.deepEqual(types.slice(0, 6), ['chat_started', 'turn_started', 'turn_finished', 'tool_call_started', 'tool_call_finished', 'turn_started'])
  assert.equal(items.filter((i) => i.type === 'token').map((i) => i.text).join(''), 'It is 9.')
  const response = await stream.response
  assert.equal(response.text, 'It is 9.')
  assert.equal(response.toolCalls[0].result, 9)
  await agent.close()
})

test('leaving a stream early cancels its chat', async () => {
  const agent = await mockAgent([Array(20_000).fill('word').join(' '), 'after'], {}, 1)
  let count = 0
  const stream = agent.stream('long')
  for await (const item of stream) {
    if (item.type === 'token' && ++count === 3) break
  }
  const response = await stream.response
  assert.equal(response.stopReason, 'cancelled')
  assert.equal((await agent.chat('next')).text, 'after')
  await agent.close()
})

test('a stream rejects with the chat error', async () => {
  const agent = await mockAgent([Array(30_000).fill('w').join(' ')], {}, 1)
  // close() fails every chat not yet started: wait until the first one runs,
  // so that it ends as cancelled and only the queued stream fails.
  let running
  const started = new Promise((resolve) => {
    running = resolve
  })
  const first = agent.chat('long', { onToken: () => running() })
  const queued = agent.stream('queued behind it')
  await started
  await agent.close()
  assert.equal((await first).stopReason, 'cancelled')
  await assert.rejects(async () => {
    for await (const item of queued) void item
  }, { code: ErrorCode.AGENT_NOT_RUNNING })
  await assert.rejects(queued.response, { code: ErrorCode.AGENT_NOT_RUNNING })
  // On a closed agent, the error also comes through the iterator.
  const closed = agent.stream('closed')
  await assert.rejects(closed.next(), { code: ErrorCode.AGENT_NOT_RUNNING })
})

test('an exception in onToken stops the chat and rejects with it', async () => {
  const agent = await mockAgent([Array(20_000).fill('word').join(' '), 'next'], {}, 1)
  const mine = new Error('callback failed')
  let calls = 0
  await assert.rejects(
    agent.chat('go', {
      onToken: () => {
        calls++
        throw mine
      },
    }),
    (error) => error === mine,
  )
  assert.equal(calls, 1)
  // A rejected async callback too.
  await assert.rejects(agent.chat('go', { onEvent: async () => Promise.reject(mine) }), (error) => error === mine)
  await agent.close()
})

test('a chat settles only after the Promises its callbacks returned', async () => {
  // No delay: the token and the result reach JS in one batch, before any
  // callback's Promise can settle.
  const agent = await mockAgent(['one', 'two', 'three'])
  const mine = new Error('async callback failed')
  await assert.rejects(
    agent.chat('go', {
      onToken: async () => {
        throw mine
      },
    }),
    (error) => error === mine,
  )
  let finished = false
  const slow = () =>
    new Promise((resolve) =>
      setTimeout(() => {
        finished = true
        resolve()
      }, 30),
    )
  assert.equal((await agent.chat('go', { onToken: slow })).text, 'two')
  assert.equal(finished, true)
  finished = false
  await agent.chat('go', { onEvent: slow })
  assert.equal(finished, true)
  await agent.close()
})

test('config errors are ZooErrors with codes; numbers are range-checked', async () => {
  await assert.rejects(mockAgent([], { threads: -1 }), (error) => {
    assert.ok(error instanceof ZooError)
    assert.equal(error.code, ErrorCode.INVALID_CONFIG)
    assert.match(error.message, /`threads`/)
    assert.doesNotMatch(error.message, /4294967295, got 4294967295/)
    return true
  })
  await assert.rejects(mockAgent([], { threads: 2.5 }), { code: ErrorCode.INVALID_CONFIG })
  await assert.rejects(mockAgent([], { contextSize: 2 ** 32 }), { code: ErrorCode.INVALID_CONFIG })
  await assert.rejects(mockAgent([], { temperature: -1 }), { code: ErrorCode.INVALID_CONFIG, message: /`temperature`/ })
  await assert.rejects(mockAgent([], { topP: 2 }), { code: ErrorCode.INVALID_CONFIG, message: /`topP`/ })
  await assert.rejects(mockAgent([], { notAKey: 1 }), { code: ErrorCode.INVALID_CONFIG, message: /`notAKey`/ })
  await assert.rejects(mockAgent([], { toolChoice: 'no such thing!' }), { code: ErrorCode.INVALID_CONFIG })
  await assert.rejects(zk.Agent.create({}), { code: ErrorCode.INVALID_CONFIG, message: /modelPath/ })
  await assert.rejects(zk.Agent.create({ modelPath: '/no/such/model.gguf' }), { code: ErrorCode.MODEL_LOAD_FAILED })
  await assert.rejects(zk.Model.load('/no/such/model.gguf'), { code: ErrorCode.MODEL_LOAD_FAILED })
  await assert.rejects(zk.Model.load('/no/such/model.gguf', { gpuLayers: -2 }), { code: ErrorCode.INVALID_CONFIG, message: /`gpuLayers`/ })
  await assert.rejects(zk.Model.load(42), { code: ErrorCode.INVALID_ARGUMENT })
  assert.throws(() => new zk.Agent(), TypeError)

  const agent = await mockAgent(['x'])
  await assert.rejects(agent.chat('hi', { maxTokens: -1 }), { code: ErrorCode.INVALID_ARGUMENT, message: /maxTokens/ })
  await assert.rejects(agent.chat('hi', { maxTokens: 1.5 }), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(agent.chat('hi', { toolChoice: 'bad name!' }), { code: ErrorCode.INVALID_CONFIG })
  await assert.rejects(agent.chat(42), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(agent.chat('hi', { signal: 'nope' }), { code: ErrorCode.INVALID_ARGUMENT })
  assert.throws(() => agent.registerTool({ name: 'bad name!' }, () => 1), { code: ErrorCode.INVALID_ARGUMENT, message: /bad name!/ })
  assert.throws(() => agent.registerTool(ADD, 'not a function'), { code: ErrorCode.INVALID_ARGUMENT })
  assert.throws(() => agent.registerTool({ name: 'x', parameters: { type: 'nonsense' } }, () => 1), ZooError)
  await agent.close()
  await assert.rejects(agent.chat('closed'), { code: ErrorCode.AGENT_NOT_RUNNING })
  assert.throws(() => agent.history(), { code: ErrorCode.AGENT_NOT_RUNNING })
  assert.equal(await agent.close(), true)
})

test('history, clearHistory, setSystemPrompt and setHistory', async () => {
  const agent = await mockAgent(['one', 'two'], { systemPrompt: 'Be brief.' })
  await agent.chat('first')
  assert.deepEqual(agent.history().map((m) => [m.role, m.content]), [['system', 'Be brief.'], ['user', 'first'], ['assistant', 'one']])
  const saved = agent.history()
  await agent.clearHistory()
  assert.deepEqual(agent.history().map((m) => m.role), ['system'])
  await agent.setSystemPrompt('Be kind.')
  assert.equal(agent.history()[0].content, 'Be kind.')
  await agent.setSystemPrompt(null)
  assert.deepEqual(agent.history(), [])
  await agent.setHistory(saved)
  assert.deepEqual(agent.history(), saved)
  await assert.rejects(agent.setHistory([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]), { code: ErrorCode.INVALID_MESSAGE_SEQUENCE })
  assert.deepEqual(agent.history(), saved)
  await assert.rejects(agent.setHistory('nope'), { code: ErrorCode.INVALID_ARGUMENT })
  await agent.close()
})

test('queued chats run in order; close() fails the queued ones', async () => {
  const agent = await mockAgent(['a', 'b', 'c'])
  const results = await Promise.all([agent.chat('1'), agent.chat('2'), agent.chat('3')])
  assert.deepEqual(results.map((r) => r.text), ['a', 'b', 'c'])

  const slow = await mockAgent([Array(30_000).fill('w').join(' '), 'never'], {}, 1)
  const first = slow.chat('long')
  const second = slow.chat('queued')
  const closing = slow.close()
  const settled = await Promise.allSettled([first, second])
  assert.equal(await closing, true)
  assert.ok(settled[0].status === 'fulfilled' ? settled[0].value.stopReason === 'cancelled' : settled[0].reason.code === ErrorCode.AGENT_NOT_RUNNING)
  assert.equal(settled[1].status, 'rejected')
  assert.equal(settled[1].reason.code, ErrorCode.AGENT_NOT_RUNNING)
})

test('a script that never calls close() exits by itself (child process, time limit)', () => {
  // The exit is timed from the child's last line; the 120 s limit only
  // catches a hang (starting node and the agent is slow on a busy machine).
  const child = spawnSync(process.execPath, [fileURLToPath(new URL('./exit_child.mjs', import.meta.url)), 'mock'], {
    timeout: 120_000,
    encoding: 'utf8',
    env: process.env,
  })
  const ended = Date.now()
  assert.equal(child.error, undefined, 'the child did not exit within 120 s')
  assert.equal(child.status, 0, child.stderr)
  const { exitingAt, ...result } = JSON.parse(child.stdout.trim())
  assert.deepEqual(result, { text: 'three', calls: 1 })
  // Well under a second when idle; an agent that kept the event loop alive
  // would never exit.
  assert.ok(ended - exitingAt < 10_000, `the exit took ${ended - exitingAt} ms`)
})

test('the mock is a public provider, chosen in the config as a user testing their own agent would', async () => {
  const agent = await zk.Agent.create({
    provider: { type: 'mock', replies: ['Hello there', { error: 'no luck' }], pieceDelayMs: 1 },
  })
  const tokens = []
  assert.equal((await agent.chat('hi', { onToken: (t) => tokens.push(t) })).text, 'Hello there')
  assert.deepEqual(tokens, ['Hello', ' there'])
  await assert.rejects(agent.chat('again'), { code: ErrorCode.INFERENCE_FAILED, message: 'inference failed: no luck' })
  assert.equal((await agent.chat('third')).text, 'echo: third')
  await agent.close()
  // Its keys are named in camelCase, also inside the provider.
  await assert.rejects(zk.Agent.create({ provider: { type: 'mock', pieceDelayMs: -5 } }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `provider.pieceDelayMs`: expected a whole number from 0 to 60000, got -5',
  })
  // The private keys of earlier versions are gone.
  await assert.rejects(zk.Agent.create({ _mockReplies: ['hi'] }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /^invalid config `_mock_replies`: unknown key/,
  })
  // Neither a model nor a provider: the engine's error, as in C and Python.
  await assert.rejects(zk.Agent.create({ temperature: 0 }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `modelPath`: is required to create an agent (or a `provider`)',
  })
  await assert.rejects(zk.Agent.create({ provider: { type: 'mock' }, _mockDelayMs: 1 }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /^invalid config `_mock_delay_ms`: unknown key/,
  })
})
