// Built-in tools through Node's config (camelCase): registered on the
// workspace, a search that runs, and a bad workspace named in the error.
import assert from 'node:assert/strict'
import test from 'node:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { zk, toolCall } from './helpers.mjs'

const { Agent, ErrorCode } = zk

test('builtin tools from the config', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'zoo-node-builtin-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(path.join(dir, 'notes.txt'), 'buy milk\n')
  const agent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('search', { pattern: 'milk' }), 'Found.'] },
    builtinTools: { tools: ['list_files', 'search'], workspace: dir, bashDeny: ['rm -rf'] },
  })
  assert.deepEqual(agent.tools().map((d) => d.name), ['list_files', 'search'])
  const response = await agent.chat('where is milk?')
  assert.equal(response.toolCalls[0].result.text, 'notes.txt:1: buy milk')
  await agent.close()
  await assert.rejects(
    Agent.create({ provider: { type: 'mock' }, builtinTools: { tools: ['read_file'], workspace: path.join(dir, 'missing') } }),
    { code: ErrorCode.INVALID_CONFIG, message: /builtinTools\.workspace/ },
  )
})
