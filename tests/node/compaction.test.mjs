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
