// Skills through Node: the config key, the list in the system prompt, the
// model's load_skill, and activateSkill / deactivateSkill.
import assert from 'node:assert/strict'
import test from 'node:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { zk, toolCall } from './helpers.mjs'

const { Agent, ErrorCode } = zk
const SCHEMA = { type: 'object', properties: {} }

function skillsDir(t, files) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'zoo-node-skills-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.join(dir, name))
    writeFileSync(path.join(dir, name, 'SKILL.md'), text)
  }
  return dir
}

test('a skill loads, restricts the tools and restores them', async (t) => {
  const dir = skillsDir(t, { notes: '---\nname: notes\ndescription: Takes notes\nallowed-tools: echo\n---\nWrite short notes.\n' })
  const agent = await Agent.create({
    provider: { type: 'mock', replies: [toolCall('load_skill', { name: 'notes' }), 'Loaded.'] },
    skills: [dir],
  })
  agent.registerTool({ name: 'echo', description: 'test', parameters: SCHEMA }, () => 'ok')
  agent.registerTool({ name: 'other', description: 'test', parameters: SCHEMA }, () => 'ok')
  assert.deepEqual(agent.skills().map((s) => [s.name, s.allowedTools]), [['notes', ['echo']]])
  assert.match(agent.history()[0].content, /<name>notes<\/name>/)
  const response = await agent.chat('take a note')
  assert.deepEqual(response.toolCalls[0].result, { text: 'Write short notes.', details: { skill: 'notes' } })
  assert.deepEqual(agent.tools().map((d) => d.name), ['load_skill', 'echo'])
  agent.deactivateSkill()
  assert.deepEqual(agent.tools().map((d) => d.name), ['load_skill', 'echo', 'other'])
  assert.equal(agent.activateSkill('notes'), 'Write short notes.')
  assert.throws(() => agent.activateSkill('nope'), { code: ErrorCode.INVALID_ARGUMENT, message: /no skill `nope`/ })
  await agent.close()
})

test('a broken skill is invalid config', async (t) => {
  const dir = skillsDir(t, { bad: 'no frontmatter' })
  await assert.rejects(Agent.create({ provider: { type: 'mock' }, skills: [dir] }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /SKILL\.md/,
  })
})
