// The compaction cascade and tool-result hygiene through Node: the config
// keys in camelCase, and history_compacted events with their level.
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk, toolCall } from './helpers.mjs'

const { Agent } = zk
const WEATHER = { name: 'weather', description: 'Weather report', parameters: { type: 'object', properties: {} } }

test('a long tool result is cut before it enters the history', async () => {
  const agent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('weather', {}), 'Done.'] },
    maxToolResultTokens: 40,
  })
  agent.registerTool(WEATHER, () => Array(3000).fill('sunny').join(' '))
  await agent.chat('weather?')
  const stored = agent.history()[2]
  assert.equal(stored.role, 'tool')
  assert.match(stored.content, /tokens cut/)
  assert.ok(stored.content.length < 1000)
  await agent.close()
})

test('with a summarizer (camelCase keys, its provider too), a long tool result enters the history as its summary', async () => {
  const agent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('weather', {}), 'Done.'] },
    maxToolResultTokens: 40,
    summarizer: { provider: { type: 'mock', replies: ['Sunny all week.'], pieceDelayMs: 0 }, maxTokens: 32, systemPrompt: 'Summarize.' },
  })
  agent.registerTool(WEATHER, () => Array(3000).fill('sunny').join(' '))
  await agent.chat('weather?')
  assert.equal(agent.history()[2].content, '[summary of a 3004-token result] Sunny all week.')
  await agent.close()
  // Without a provider the summarizer is the agent's own (the mock, which
  // echoes what it is asked).
  const own = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('weather', {}), 'Done.'] },
    maxToolResultTokens: 40,
    summarizer: { maxTokens: 16 },
  })
  own.registerTool(WEATHER, () => Array(3000).fill('sunny').join(' '))
  await own.chat('weather?')
  assert.match(own.history()[2].content, /^\[summary of a 3004-token result\] /)
  await own.close()
  await assert.rejects(Agent.create({ provider: { type: 'mock' }, summarizer: { maxTokens: 8 } }), {
    code: zk.ErrorCode.INVALID_CONFIG,
    message: 'invalid config `summarizer.maxTokens`: expected a whole number from 16 to 4096, got 8',
  })
})

test('compaction reports its levels as history_compacted events', async () => {
  const replies = []
  for (let i = 0; i < 40; i++) replies.push(toolCall('weather', {}), 'It is sunny.')
  const agent = await Agent.create({
    provider: { type: 'mock', replies },
    contextStrategy: { compact: { keepRecent: 2, toolResultTokens: 50 } },
  })
  agent.registerTool(WEATHER, () => Array(400).fill('sunny').join(' '))
  const levels = new Set()
  for (let turn = 0; turn < 40; turn++) {
    const response = await agent.chat(`day ${turn}?`, {
      onEvent: (e) => {
        if (e.type === 'history_compacted') {
          assert.ok(e.tokensAfter < e.tokensBefore)
          levels.add(e.level)
        }
      },
    })
    assert.equal(response.text, 'It is sunny.')
  }
  assert.ok(levels.has('truncate_tool_results'), [...levels].join(','))
  await agent.close()
})

const question = (n) => `message number ${n} with a few words`

test('a contextStrategy function is your own strategy: what it keeps is the history', async () => {
  const requests = []
  // A window of 120 tokens: a budget of 90; each question is 11 tokens and each echo 12.
  const agent = await Agent.create({
    provider: { type: 'mock' },
    contextSize: 120,
    contextStrategy: (request) => {
      requests.push(request)
      const { messages, currentTurn } = request
      return [{ role: 'assistant', content: `(summary of ${currentTurn} messages)` }, ...messages.slice(currentTurn)]
    },
  })
  const compacted = []
  for (let n = 0; n < 5; n++) {
    await agent.chat(question(n), { onEvent: (e) => e.type === 'history_compacted' && compacted.push(e) })
  }
  assert.equal(requests.length, 1)
  const [request] = requests
  assert.equal(request.messages.length, 9)
  assert.equal(request.currentTurn, 8)
  assert.equal(request.budget, 90)
  assert.equal(request.systemTokens, 0)
  assert.deepEqual(request.tokens, [11, 12, 11, 12, 11, 12, 11, 12, 11])
  assert.equal(compacted.length, 1)
  assert.equal(compacted[0].level, 'custom')
  assert.equal(compacted[0].tokensBefore, 103)
  // "(summary of 8 messages)" is 4 words and the markup's 4.
  assert.equal(compacted[0].tokensAfter, 8 + 11)
  assert.equal(compacted[0].removed.length, 8)
  assert.deepEqual(agent.history().map((m) => m.content), [
    '(summary of 8 messages)',
    question(4),
    `echo: ${question(4)}`,
  ])
  await agent.close()
})

test('a contextStrategy hook that breaks a rule or throws fails safe: fifo runs and onError hears why', async () => {
  const errors = []
  let answer = (request) => request.messages // everything: over the budget
  const agent = await Agent.create({
    provider: { type: 'mock' },
    contextSize: 120,
    hooks: {
      contextStrategy: (request) => answer(request),
      onError: (error) => errors.push(error.message),
    },
  })
  const levels = []
  const chat = (n) => agent.chat(question(n), { onEvent: (e) => e.type === 'history_compacted' && levels.push(e.level) })
  for (let n = 0; n < 5; n++) await chat(n)
  assert.deepEqual(levels, ['fifo'])
  assert.deepEqual(errors, [
    'internal error: the context_strategy hook failed: the messages it returned take 103 tokens with the system prompt, over the budget of 90',
  ])
  answer = () => {
    throw new Error('no strategy today')
  }
  await chat(5)
  assert.deepEqual(levels, ['fifo', 'fifo'])
  assert.match(errors[1], /the context_strategy hook failed: .*no strategy today/)
  await agent.close()
})
