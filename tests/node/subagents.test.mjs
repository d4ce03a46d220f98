// Sub-agents through Node: a child agent offered as a tool answers the
// parent's task, may call the tools it was given, and bad specs throw.
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk, toolCall } from './helpers.mjs'

const { Agent, ErrorCode } = zk

test("the child's answer is the result", async () => {
  const parent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('researcher', { task: 'weather in Oslo' }), 'Done.'] },
  })
  let ran = 0
  parent.registerTool({ name: 'weather', description: 'Weather', parameters: { type: 'object', properties: {} } }, () => {
    ran += 1
    return 'cold'
  })
  parent.addSubagent({
    name: 'researcher',
    description: 'Looks things up',
    tools: ['weather'],
    config: {
      systemPrompt: 'You research.',
      provider: { type: 'mock', replies: [toolCall('weather', {}), 'It is cold in Oslo.'], pieceDelayMs: 0 },
    },
  })
  const response = await parent.chat('Oslo?')
  assert.equal(response.text, 'Done.')
  assert.equal(response.toolCalls[0].result.text, 'It is cold in Oslo.')
  assert.equal(ran, 1)
  await parent.close()
})

test('bad specs throw typed errors', async () => {
  const parent = await Agent.create({ provider: { type: 'mock' } })
  assert.throws(() => parent.addSubagent({ name: 'r', description: 'd', tools: ['missing'], config: { provider: { type: 'mock' } } }), {
    code: ErrorCode.TOOL_NOT_FOUND,
  })
  assert.throws(() => parent.addSubagent({ name: 'r', description: 'd' }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: /give the sub-agent a provider/,
  })
  assert.throws(() => parent.addSubagent({ name: 'r', description: 'd', config: { temprature: 1 } }), {
    code: ErrorCode.INVALID_CONFIG,
  })
  await parent.close()
})

test("the child's steps are updates of the call and its usage joins the parent's", async () => {
  const parent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('researcher', { task: 'weather in Oslo' }), 'Done.'] },
  })
  parent.registerTool({ name: 'weather', parameters: { type: 'object', properties: {} } }, () => 'cold')
  parent.addSubagent({
    name: 'researcher',
    description: 'Looks things up',
    tools: ['weather'],
    config: { provider: { type: 'mock', replies: [toolCall('weather', {}), 'It is cold in Oslo.'] } },
  })
  const events = []
  const response = await parent.chat('Oslo?', { onEvent: (e) => events.push(e) })
  const steps = events.filter((e) => e.type === 'tool_call_update').map((e) => e.update)
  assert.deepEqual(steps.map((s) => s.event), ['turn_finished', 'tool_call_started', 'tool_call_finished', 'turn_finished'])
  assert.deepEqual(steps[1], { subagent: 'researcher', event: 'tool_call_started', id: 'call_1', name: 'weather' })
  const own = events.filter((e) => e.type === 'turn_finished').reduce((n, e) => n + e.usage.totalTokens, 0)
  const child = response.toolCalls[0].result.details.usage.total_tokens
  assert.ok(child > 0)
  assert.equal(response.usage.totalTokens, own + child)
  assert.equal(events.at(-1).usage.totalTokens, response.usage.totalTokens)
  await parent.close()
})

test("the parent's stop reaches the child", async () => {
  // The child calls `started` (a parent tool it was given), then writes
  // 2,000 words at 50 ms each: 100 s unless the stop reaches it.
  const parent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('researcher', { task: 'a long job' }), 'Next.'] },
  })
  parent.registerTool({ name: 'started', parameters: { type: 'object', properties: {} } }, () => 'ok')
  const long = Array(2000).fill('word').join(' ')
  parent.addSubagent({
    name: 'researcher',
    description: 'Looks things up',
    tools: ['started'],
    config: { provider: { type: 'mock', replies: [toolCall('started', {}), long], pieceDelayMs: 50 } },
  })
  let stoppedAt
  const response = await parent.chat('go', {
    onEvent: (e) => {
      // The child's call of `started` ended: it is writing now.
      if (e.type === 'tool_call_update' && e.update.event === 'tool_call_finished' && stoppedAt === undefined) {
        stoppedAt = performance.now()
        parent.stop()
      }
    },
  })
  assert.ok(stoppedAt !== undefined, 'the child never called its tool')
  assert.equal(response.stopReason, 'cancelled')
  // Generous for a busy machine; the child alone would take 100 s.
  assert.ok(performance.now() - stoppedAt < 20_000, `${performance.now() - stoppedAt} ms`)
  // The parent is usable again.
  assert.equal((await parent.chat('next')).text, 'Next.')
  await parent.close()
})
