// Sessions through Node: an agent with `sessionStore` and `session` keeps
// its conversation in SQLite, a new agent continues it, and SessionStore
// lists, loads, renames, exports, imports and deletes (camelCase shapes).
import assert from 'node:assert/strict'
import test from 'node:test'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { zk } from './helpers.mjs'

const { Agent, SessionStore, ErrorCode } = zk
const MOCK = { type: 'mock' }

function tempDb(t) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'zoo-node-sessions-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return path.join(dir, 'chats.db')
}

test('a new agent continues the session', async (t) => {
  const db = tempDb(t)
  const first = await Agent.create({ provider: MOCK, sessionStore: db, session: 'kitchen', systemPrompt: 'Be brief.' })
  assert.equal((await first.chat('hello')).text, 'echo: hello')
  assert.equal(first.sessionId, 'kitchen')
  const before = first.history()
  await first.close()
  const second = await Agent.create({ provider: MOCK, sessionStore: db, session: 'kitchen' })
  assert.deepEqual(second.history(), before)
  await second.chat('again')
  await second.close()

  const store = await SessionStore.open(db)
  assert.equal(store.path, db)
  const [info] = await store.sessions()
  assert.equal(info.id, 'kitchen')
  assert.equal(info.title, 'hello')
  assert.equal(info.messageCount, 4)
  assert.match(info.createdAt, /^\d{4}-\d\d-\d\dT/)
  const session = await store.load('kitchen')
  assert.equal(session.systemPrompt, 'Be brief.')
  assert.deepEqual(session.messages.map((m) => m.content), ['hello', 'echo: hello', 'again', 'echo: again'])

  const plain = await Agent.create({ provider: MOCK })
  assert.equal(plain.sessionId, null)
  await plain.close()
})

test('store functions and their errors', async (t) => {
  const db = tempDb(t)
  const agent = await Agent.create({ provider: MOCK, sessionStore: db, session: 'a', systemPrompt: 'sys' })
  await agent.chat('hi')
  await agent.close()
  const store = await SessionStore.open(db)
  await store.rename('a', 'Greeting')
  await store.setMetadata('a', { user: 7 })
  const exported = await store.exportJson('a')
  const lines = (await store.transcriptJsonl('a')).trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(lines[0], { role: 'system', content: 'sys' })
  assert.equal(lines.length, 3)
  await assert.rejects(store.importJson(exported), { code: ErrorCode.INVALID_ARGUMENT, message: /already in the store/ })
  assert.equal(await store.delete('a'), true)
  assert.equal(await store.delete('a'), false)
  await assert.rejects(store.load('a'), { code: ErrorCode.INVALID_ARGUMENT, message: /no session `a`/ })
  assert.equal(await store.importJson(exported), 'a')
  const back = await store.load('a')
  assert.equal(back.title, 'Greeting')
  assert.deepEqual(back.metadata, { user: 7 })
  await assert.rejects(store.importJson('{'), { code: ErrorCode.INVALID_JSON })
  await assert.rejects(store.rename('missing', 'x'), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(store.load(42), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(SessionStore.open('/nonexistent-dir/zoo/s.db'), { code: ErrorCode.IO, message: /nonexistent-dir/ })
  await assert.rejects(Agent.create({ provider: MOCK, session: 'x' }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /`session`: needs a `sessionStore`/,
  })
  const busy = await Agent.create({ provider: MOCK, sessionStore: db, session: 'busy' })
  await assert.rejects(Agent.create({ provider: MOCK, sessionStore: db, session: 'busy' }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: /open in another agent/,
  })
  await busy.close()
})
