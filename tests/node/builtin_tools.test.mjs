// Built-in tools in Node: through the config (camelCase: registered on the
// workspace, a search that runs, a bad workspace named in the error) and
// through agent.addBuiltinTools (its errors, confirmation allowing,
// refusing, throwing and rejecting, hostile paths, bash's timeout, cap and
// stop, the model reading a result's text, an image in the history).
import assert from 'node:assert/strict'
import test from 'node:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { mockAgent, zk, toolCall } from './helpers.mjs'

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

// The hostile calls fail on purpose more often than the default retries
// allow; bash's output is cut to fit the mock's window.
const LENIENT = { maxToolRetries: 5, maxToolResultTokens: 500 }

function workspace(t) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'zoo-node-builtin-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

test('addBuiltinTools registers the named tools and checks its arguments', async (t) => {
  const dir = workspace(t)
  const agent = await mockAgent([])
  t.after(() => agent.close())
  agent.addBuiltinTools(['read_file', 'bash'], { workspace: dir, bashDeny: ['sudo'] })
  assert.deepEqual(agent.tools().map((d) => d.name), ['read_file', 'bash'])
  assert.throws(() => agent.addBuiltinTools(['rm_rf'], { workspace: dir }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: /unknown built-in tool `rm_rf`/,
  })
  assert.throws(() => agent.addBuiltinTools(['read_file'], { workspace: path.join(dir, 'missing') }), {
    code: ErrorCode.INVALID_ARGUMENT,
  })
  assert.throws(() => agent.addBuiltinTools(['write_file'], { workspace: dir, confirm: 3 }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: 'invalid argument: the confirm callback of the built-in tools must be a function, got number',
  })
  assert.deepEqual(agent.tools().map((d) => d.name), ['read_file', 'bash'])
})

test('confirmation allows, refuses, and a throw refuses with its message', async (t) => {
  const dir = workspace(t)
  const write = toolCall('write_file', { path: 'notes/a.txt', content: 'hello' })
  const agent = await mockAgent([write, 'Refused.', write, 'Threw.', write, 'Rejected.', write, 'Written.'])
  t.after(() => agent.close())
  const asked = []
  const answers = [false, () => { throw new Error('no terminal') }, async () => { throw 'gone' }, async () => true]
  agent.addBuiltinTools(['write_file'], {
    workspace: dir,
    confirm: (tool, args) => {
      asked.push([tool, args])
      const answer = answers.shift()
      return typeof answer === 'function' ? answer() : answer
    },
  })
  let response = await agent.chat('write')
  assert.equal(response.toolCalls[0].error, 'tool `write_file` failed: the user refused this write_file call')
  response = await agent.chat('write')
  assert.equal(
    response.toolCalls[0].error,
    'tool `write_file` failed: the write_file call was refused: the confirmation callback failed: Error: no terminal',
  )
  response = await agent.chat('write')
  assert.equal(
    response.toolCalls[0].error,
    'tool `write_file` failed: the write_file call was refused: the confirmation callback failed: gone',
  )
  assert.equal(existsSync(path.join(dir, 'notes')), false)
  response = await agent.chat('write')
  assert.deepEqual(response.toolCalls[0].result, { text: 'wrote 5 bytes to notes/a.txt', details: { path: 'notes/a.txt', bytes: 5 } })
  assert.equal(readFileSync(path.join(dir, 'notes', 'a.txt'), 'utf8'), 'hello')
  assert.deepEqual(asked, Array(4).fill(['write_file', { path: 'notes/a.txt', content: 'hello' }]))
})

test('hostile paths are refused', async (t) => {
  const dir = workspace(t)
  writeFileSync(path.join(dir, 'inside.txt'), 'fine\n')
  symlinkSync('/etc', path.join(dir, 'etc_link'))
  const paths = ['../outside.txt', '/etc/passwd', 'etc_link/passwd', 'a\0b']
  const replies = paths.map((p) => toolCall('read_file', { path: p }))
  const agent = await mockAgent([...replies, toolCall('read_file', { path: 'inside.txt' }), 'ok'], LENIENT)
  t.after(() => agent.close())
  agent.addBuiltinTools(['read_file'], { workspace: dir })
  const response = await agent.chat('read')
  const errors = response.toolCalls.map((c) => c.error)
  assert.match(errors[0], /'\.\.\/outside\.txt' is outside the workspace/)
  assert.match(errors[1], /'\/etc\/passwd' is outside the workspace/)
  assert.match(errors[2], /'etc_link\/passwd' is outside the workspace/)
  assert.match(errors[3], /control character/)
  assert.equal(response.toolCalls[4].result.text, '     1\tfine\n')
})

test('bash: timeout, the 256 KB cap, and the model reads the text only', async (t) => {
  const dir = workspace(t)
  const agent = await mockAgent([
    toolCall('bash', { command: 'sleep 30', timeout_ms: 300 }),
    toolCall('bash', { command: 'yes x | head -c 300000' }),
    'done',
  ], LENIENT)
  t.after(() => agent.close())
  agent.addBuiltinTools(['bash'], { workspace: dir })
  const response = await agent.chat('run')
  const timedOut = response.toolCalls[0].result
  assert.equal(timedOut.details.timed_out, true)
  assert.equal(timedOut.details.exit_code, null)
  assert.match(timedOut.text, /the command timed out after 300 ms and was killed/)
  const capped = response.toolCalls[1].result.details
  assert.equal(capped.stdout.length, 256 * 1024)
  assert.equal(capped.stdout_truncated_bytes, 300000 - 256 * 1024)
  const results = agent.history().filter((m) => m.role === 'tool')
  assert.equal(results[0].content, timedOut.text)
})

test("the chat's stop kills a running command", async (t) => {
  const dir = workspace(t)
  const command = 'sleep 300 & echo $! > sleeper.pid; wait'
  const agent = await mockAgent([toolCall('bash', { command }), 'never'])
  t.after(() => agent.close())
  agent.addBuiltinTools(['bash'], { workspace: dir })
  let stopped = false
  const response = await agent.chat('run', {
    onEvent: (event) => {
      // The command reports progress once a second while it runs.
      if (event.type === 'tool_call_progress' && !stopped) {
        stopped = true
        agent.stop()
      }
    },
  })
  assert.ok(stopped)
  assert.equal(response.stopReason, 'cancelled')
  const pid = Number(readFileSync(path.join(dir, 'sleeper.pid'), 'utf8'))
  const deadline = Date.now() + 30_000
  let running = alive(pid)
  while (running && Date.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve))
    running = alive(pid)
  }
  // The loop's own last look decides: a second read could catch the
  // exiting process in another state.
  assert.equal(running, false, `process ${pid} outlived the stop`)
  assert.equal((await agent.chat('next')).text, 'never')
})

/**
 * Whether process `pid` still runs: gone (no /proc entry) or a zombie is
 * not. Any other failure to read its stat (seen once on a busy machine)
 * says nothing either way, so it counts as still running and the caller
 * looks again.
 */
function alive(pid) {
  let stat
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch (error) {
    return !(error.code === 'ENOENT' || error.code === 'ESRCH')
  }
  // A read of an exiting process may come back empty: look again.
  if (!stat.includes(')')) return true
  return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
}

test('read_file returns an image, kept in the history', async (t) => {
  const dir = workspace(t)
  const png = Buffer.concat([
    Buffer.from('\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR', 'latin1'),
    Buffer.from([0, 0, 0, 5, 0, 0, 0, 7, 8, 6, 0, 0, 0, 0, 0, 0, 0]),
  ])
  writeFileSync(path.join(dir, 'pic.png'), png)
  const agent = await mockAgent([toolCall('read_file', { path: 'pic.png' }), 'A picture.'])
  t.after(() => agent.close())
  agent.addBuiltinTools(['read_file'], { workspace: dir })
  const response = await agent.chat('look')
  assert.deepEqual(response.toolCalls[0].result.details, {
    path: 'pic.png', mime_type: 'image/png', bytes: png.length, width: 5, height: 7,
  })
  const history = agent.history()
  const message = history.find((m) => m.role === 'tool')
  assert.deepEqual(message.images, [{ mimeType: 'image/png', data: png.toString('base64') }])
  await agent.setHistory(history)
  assert.deepEqual(agent.history().find((m) => m.role === 'tool').images, message.images)
})
