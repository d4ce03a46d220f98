// Logs through setLogger and per-chat hooks, on the mock: the tool-call
// record with its chat id, tool and latency, level filtering, the debug
// prompt and raw output, a logger that blocks the JavaScript thread never
// holds the engine up (records are dropped and counted instead), and a
// chat's own hooks replacing the agent's for that chat only.
import assert from 'node:assert/strict'
import test from 'node:test'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { zk, mockAgent, toolCall, ADD } from './helpers.mjs'

const { ZooError, ErrorCode } = zk
const WAIT = { timeoutMs: 30000 }

/** Keeps the records of the agent with `agentId` (the logger is process-wide). */
function keep() {
  const records = []
  return {
    records,
    logger: (record) => records.push(record),
    of: (agent, target) => records.filter((r) => r.fields.agentId === agent.id && (!target || r.target === target)),
  }
}

async function adder(replies) {
  const agent = await mockAgent(replies)
  agent.registerTool(ADD, ({ a, b }) => a + b)
  return agent
}

test('a tool call is logged with its chat, tool and latency', async () => {
  const kept = keep()
  zk.setLogger(kept.logger)
  const agent = await adder([toolCall('add', { a: 2, b: 3 }), '5'])
  try {
    assert.equal((await agent.chat('2+3?')).text, '5')
    assert.equal(await zk.flushLogs(WAIT), true)
    const tools = kept.of(agent, 'zoo::tool')
    assert.equal(tools.length, 1)
    const [record] = tools
    assert.equal(record.level, 'info')
    assert.equal(record.fields.chatId, 1)
    assert.equal(record.fields.tool, 'add')
    assert.equal(record.fields.callId, 'call_1')
    assert.equal(record.fields.ok, true)
    assert.ok(record.fields.latencyMs >= 0)
    assert.match(record.message, /^tool `add` \(call_1\) returned in /)
    assert.deepEqual(kept.of(agent, 'zoo::turn').map((r) => r.fields.turn), [1, 2])
    assert.deepEqual(kept.of(agent, 'zoo::chat').map((r) => r.fields.stopReason), ['stop'])
    assert.deepEqual(kept.of(agent, 'zoo::prompt'), [])
  } finally {
    zk.setLogger(null)
    await agent.close()
  }
})

test('the level filters records, and debug shows the prompt and the raw output', async () => {
  const kept = keep()
  zk.setLogger(kept.logger, { level: 'warn' })
  const agent = await adder([toolCall('add', { a: 1, b: 1 }), '2'])
  try {
    await agent.chat('1+1?')
    assert.equal(await zk.flushLogs(WAIT), true)
    assert.deepEqual(kept.of(agent), [])
    zk.setLogLevel('debug')
    await agent.chat('again')
    assert.equal(await zk.flushLogs(WAIT), true)
    const [prompt, ...more] = kept.of(agent, 'zoo::prompt')
    assert.deepEqual(more, [])
    assert.equal(prompt.level, 'debug')
    assert.equal(prompt.fields.form, 'messages')
    assert.equal(prompt.fields.chatId, 2)
    // The mock renders nothing: the record is what it received.
    assert.deepEqual(JSON.parse(prompt.message).at(-1), { role: 'user', content: 'again' })
    assert.deepEqual(kept.of(agent, 'zoo::raw_output').map((r) => r.message), ['echo: again'])
    assert.throws(() => zk.setLogLevel('loud'), (e) => e instanceof ZooError && e.code === ErrorCode.INVALID_ARGUMENT)
    assert.throws(() => zk.setLogger('console'), (e) => e instanceof ZooError && e.code === ErrorCode.INVALID_ARGUMENT)
  } finally {
    zk.setLogger(null)
    await agent.close()
  }
})

test('a logger that blocks the JavaScript thread never holds the engine up', async () => {
  const kept = keep()
  zk.setLogger(kept.logger, { level: 'debug' })
  const agent = await mockAgent([])
  const before = zk.droppedLogs()
  try {
    // Queued chats run on the inference thread while this thread is kept
    // busy: their records pile up to the queue's bound and the rest are
    // dropped (counted), never kept, and the chats go on.
    const chats = Array.from({ length: 600 }, (_, i) => agent.chat(`echo ${i}`))
    const deadline = Date.now() + 60000
    while (zk.droppedLogs() === before && Date.now() < deadline) {
      // Busy: no logger call can run until this loop ends.
    }
    assert.ok(zk.droppedLogs() > before, 'nothing was dropped while the JavaScript thread was busy')
    await Promise.all(chats)
    assert.equal(await zk.flushLogs(WAIT), true)
    const warning = kept.records.find((r) => r.target === 'zoo::logs')
    assert.ok(warning, 'the logger is told records were dropped')
    assert.equal(warning.level, 'warn')
    assert.ok(warning.fields.dropped >= 1)
  } finally {
    zk.setLogger(null)
    await agent.close()
  }
})

test("a chat's own hooks run instead of the agent's, for that chat only", async () => {
  const ask = toolCall('add', { a: 1, b: 2 })
  const agentSaw = []
  const agent = await mockAgent([ask, 'agent', ask, 'chat', ask, 'agent again'], {
    hooks: {
      beforeToolCall: (call) => {
        agentSaw.push(call.id)
        return { action: 'deny', reason: 'the agent says no' }
      },
    },
  })
  agent.registerTool(ADD, ({ a, b }) => a + b)
  try {
    const first = await agent.chat('1+2?')
    assert.equal(first.toolCalls[0].error, 'tool `add` failed: the call was denied: the agent says no')
    const chatSaw = []
    const second = await agent.chat('1+2?', {
      hooks: {
        beforeToolCall: async (call) => {
          chatSaw.push(call.arguments)
          return { action: 'rewrite', arguments: { a: 10, b: 20 } }
        },
      },
    })
    assert.equal(second.text, 'chat')
    assert.equal(second.toolCalls[0].result, 30)
    assert.deepEqual(chatSaw, [{ a: 1, b: 2 }])
    assert.deepEqual(agentSaw, ['call_1'])
    const third = await agent.chat('1+2?')
    assert.ok(third.toolCalls[0].error)
    assert.deepEqual(agentSaw, ['call_1', 'call_3'])
    // {} runs no hook; bad hooks are refused before the chat starts.
    assert.equal((await agent.chat('plain', { hooks: {} })).text, 'echo: plain')
    await assert.rejects(agent.chat('x', { hooks: { beforeEverything: () => {} } }), (e) => e instanceof ZooError && e.code === ErrorCode.INVALID_ARGUMENT && /`beforeEverything` is not a hook/.test(e.message))
    const items = []
    for await (const item of agent.stream('streamed', { hooks: { inputFilter: () => ({ action: 'warn', warning: '(noted)' }) } })) items.push(item)
    assert.equal(items.filter((i) => i.type === 'token').map((i) => i.text).join(''), 'echo: streamed\n\n(noted)')
  } finally {
    await agent.close()
  }
})

test('a session write is a debug record', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'zoo-node-logs-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const kept = keep()
  zk.setLogger(kept.logger, { level: 'debug' })
  const agent = await zk.Agent.create({ provider: { type: 'mock' }, sessionStore: path.join(dir, 'chats.db'), session: 'logged' })
  try {
    await agent.chat('hello')
    assert.equal(await zk.flushLogs(WAIT), true)
    // The chat's round, its question and reply, in one transaction.
    const writes = kept.of(agent, 'zoo::session')
    assert.equal(writes.length, 1)
    const [record] = writes
    assert.equal(record.level, 'debug')
    assert.equal(record.message, 'session written')
    assert.equal(record.fields.session, 'logged')
    assert.equal(record.fields.messages, 2)
    assert.equal(record.fields.deletedFrom, 0)
    assert.ok(record.fields.latencyUs >= 0)
  } finally {
    zk.setLogger(null)
    await agent.close()
  }
})
