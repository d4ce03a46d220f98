// MCP servers from Node, on the mock provider: the fake server's faults
// (tests/mcp/fake_server.py). The real @modelcontextprotocol servers,
// installed from npm, are tested in mcp_servers.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import net from 'node:net'
import readline from 'node:readline'
import os from 'node:os'
import path from 'node:path'
import { ROOT, zk, mockAgent, toolCall } from './helpers.mjs'

const { ErrorCode } = zk
const PYTHON = process.env.PYTHON ?? 'python3'
const FAKE = path.join(ROOT, 'tests', 'mcp', 'fake_server.py')
// How many tools the fake server lists.
const FAKE_TOOLS = 15
// Failures that must not wait for a server's timeout (60 s by default) are
// bounded here, far from it: a loaded machine cannot turn one into the other.
const AT_ONCE_MS = 30_000

function tempDir() {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'zoo-node-mcp-')))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

test('the fake server: tools, results and errors in a chat; removing it removes its tools', async () => {
  const agent = await mockAgent([
    toolCall('fake__echo', { text: 'from Node' }),
    toolCall('fake__fail', { message: 'disk full' }),
    toolCall('fake__rpc_error', {}),
    toolCall('fake__media', {}),
    'Done.',
  ])
  const info = await agent.addMcpServer('fake', { command: PYTHON, args: [FAKE], timeoutMs: 60_000 })
  assert.equal(info.name, 'fake')
  assert.equal(info.serverName, 'fake-server')
  assert.equal(info.serverVersion, '1.0.0')
  assert.equal(typeof info.protocolVersion, 'string')
  assert.equal(info.tools[0], 'fake__echo')
  assert.equal(info.tools.length, FAKE_TOOLS)
  assert.deepEqual(info.skipped, [])
  assert.equal(info.state, 'running')
  assert.equal(info.stateReason, null)
  assert.deepEqual(agent.mcpServers(), [info])

  const events = []
  const response = await agent.chat('go', { onEvent: (e) => events.push(e) })
  assert.equal(response.text, 'Done.')
  assert.equal(response.toolCalls[0].result, 'echo: from Node')
  assert.equal(response.toolCalls[1].error, 'tool `fake__fail` failed: disk full')
  assert.match(response.toolCalls[2].error, /JSON-RPC error -32001/)
  assert.match(response.toolCalls[2].error, /the database is locked/)
  assert.match(response.toolCalls[3].result, /a picture:/)
  assert.match(response.toolCalls[3].result, /\[image: image\/png, \d+ bytes\]/)
  assert.match(response.toolCalls[3].result, /remember/)
  assert.deepEqual(response.toolErrors.map((e) => e.tool), ['fake__fail', 'fake__rpc_error'])
  assert.ok(events.some((e) => e.type === 'tool_call_finished' && e.name === 'fake__echo'))

  assert.equal(await agent.removeMcpServer('fake'), true)
  assert.equal(await agent.removeMcpServer('fake'), false)
  assert.deepEqual(agent.mcpServers(), [])
  await agent.close()
})

test('env and cwd reach the server', async () => {
  const dir = tempDir()
  const wrapper = path.join(dir, 'where.py')
  // Checks its environment and directory, then runs the fake server.
  writeFileSync(
    wrapper,
    [
      'import os, runpy, sys',
      "assert os.environ['ZOO_TEST_VAR'] == 'set', 'env not passed'",
      `assert os.getcwd() == ${JSON.stringify(dir)}, os.getcwd()`,
      `sys.argv = [${JSON.stringify(FAKE)}]`,
      `runpy.run_path(${JSON.stringify(FAKE)}, run_name='__main__')`,
      '',
    ].join('\n'),
  )
  const agent = await mockAgent([toolCall('w__echo', { text: 'ok' }), 'done'])
  await agent.addMcpServer('w', { command: PYTHON, args: [wrapper], env: { ZOO_TEST_VAR: 'set' }, cwd: dir })
  assert.equal((await agent.chat('go')).toolCalls[0].result, 'echo: ok')
  await agent.close()
})

test('a server that fails to start rejects with code 14, naming the command and its stderr', async () => {
  const agent = await mockAgent([])
  await assert.rejects(agent.addMcpServer('db', { command: PYTHON, args: [FAKE, '--exit-early'] }), (error) => {
    assert.ok(error instanceof zk.ZooError)
    assert.equal(error.code, ErrorCode.MCP)
    assert.match(error.message, /fake_server\.py --exit-early/)
    assert.match(error.message, /cannot open database \/nonexistent\/db\.sqlite/)
    assert.match(error.message, /exit status: 3/)
    return true
  })
  await assert.rejects(agent.addMcpServer('nope', { command: '/nonexistent/zoo-mcp' }), {
    code: ErrorCode.MCP,
    message: /\/nonexistent\/zoo-mcp/,
  })
  assert.deepEqual(agent.mcpServers(), [])
  await agent.close()
})

test('bad descriptions are ZooErrors of code 1 that say what is wrong', async () => {
  const agent = await mockAgent([])
  const bad = async (name, server, pattern) =>
    assert.rejects(agent.addMcpServer(name, server), { code: ErrorCode.INVALID_ARGUMENT, message: pattern })
  await bad('x', undefined, /must be an object/)
  await bad('x', {}, /exactly one of `command`/)
  await bad('x', { command: 'a', url: 'http://127.0.0.1:1/mcp' }, /exactly one of `command`/)
  await bad('x', { command: 'a', bearerToken: 't' }, /unknown key `bearerToken` for a stdio server/)
  await bad('x', { url: 'http://127.0.0.1:1/mcp', args: [] }, /unknown key `args` for an HTTP server/)
  await bad('x', { command: 'a', args: '--flag' }, /`args` must be an array of strings/)
  await bad('x', { command: 'a', env: { N: 1 } }, /`env.N` must be a string/)
  await bad('x', { command: 'a', timeoutMs: 0 }, /`timeoutMs` must be a positive integer/)
  await bad('x', { command: 'a', timeoutMs: 1.5 }, /`timeoutMs` must be a positive integer/)
  await bad('x', { command: 'a', maxMessageBytes: 0 }, /`maxMessageBytes` must be a positive integer \(bytes\)/)
  await bad('x', { url: 'http://127.0.0.1:1/mcp', maxMessageBytes: '1' }, /`maxMessageBytes` must be a positive integer/)
  await bad('x', { url: 'ftp://example.com' }, /http:\/\//)
  await bad('bad name', { command: PYTHON, args: [FAKE] }, /bad name/)
  await bad(42, { command: PYTHON, args: [FAKE] }, /`name` must be a string/)
  assert.deepEqual(agent.mcpServers(), [])
  await agent.close()
})

test('a crash and a hang are tool errors; the agent and its other servers go on', async () => {
  const agent = await mockAgent([
    toolCall('slow__hang', {}),
    toolCall('slow__echo', { text: 'after the hang' }),
    toolCall('fake__crash', {}),
    'survived',
    toolCall('slow__echo', { text: 'still here' }),
    'still answering',
  ])
  await agent.addMcpServer('fake', { command: PYTHON, args: [FAKE] })
  // The timeout bounds the handshake too: long enough for python to start
  // on a loaded machine.
  await agent.addMcpServer('slow', { command: PYTHON, args: [FAKE], timeoutMs: 3000 })
  const started = Date.now()
  const response = await agent.chat('go')
  assert.ok(Date.now() - started < 3000 + AT_ONCE_MS)
  assert.match(response.toolCalls[0].error, /no answer to `tools\/call` within 3 s/)
  assert.equal(response.toolCalls[1].result, 'echo: after the hang')
  assert.match(response.toolCalls[2].error, /segmentation fault \(simulated\)/)
  assert.equal(response.text, 'survived')
  // The crashed server is listed as dead, its tools withdrawn.
  const fake = agent.mcpServers().find((s) => s.name === 'fake')
  assert.equal(fake.state, 'dead')
  assert.deepEqual(fake.tools, [])
  assert.match(fake.stateReason, /exit status: 7/)
  assert.equal(agent.mcpServers().find((s) => s.name === 'slow').state, 'running')
  const again = await agent.chat('again')
  assert.equal(again.toolCalls[0].result, 'echo: still here')
  assert.equal(again.text, 'still answering')
  await agent.close()
})

test('maxMessageBytes: a larger message fails the call, and the server goes on', async () => {
  const agent = await mockAgent([
    toolCall('big__flood', { stream: 'stdout', mb: 2 }),
    toolCall('big__echo', { text: 'small' }),
    'Done.',
  ])
  await agent.addMcpServer('big', { command: PYTHON, args: [FAKE], maxMessageBytes: 64 * 1024 })
  const started = Date.now()
  const response = await agent.chat('go')
  assert.ok(Date.now() - started < AT_ONCE_MS)
  assert.match(response.toolCalls[0].error, /larger than 64 KiB \(the transport's max_message_bytes\)/)
  assert.equal(response.toolCalls[1].result, 'echo: small')
  assert.equal(agent.mcpServers()[0].state, 'running')
  await agent.close()
})

test('a server that stopped reading fails the call at once and is listed as dead', async () => {
  // The fake server shuts the reading side of its stdin before it answers
  // the last tools/list page: the call's write finds no reader and fails at
  // once, not after its 60 s timeout.
  const agent = await mockAgent([toolCall('quiet__echo', { text: 'anyone?' }), 'Done.'])
  await agent.addMcpServer('quiet', { command: PYTHON, args: [FAKE, '--close-stdin'], timeoutMs: 60_000 })
  const started = Date.now()
  const response = await agent.chat('go')
  assert.ok(Date.now() - started < AT_ONCE_MS)
  assert.equal(response.text, 'Done.')
  assert.match(response.toolCalls[0].error, /closed its stdin/)
  assert.equal(agent.mcpServers()[0].state, 'dead')
  await agent.close()
})

test('tool-list entries that are no tools are skipped and listed', async () => {
  const agent = await mockAgent([])
  const info = await agent.addMcpServer('fake', { command: PYTHON, args: [FAKE, '--bad-tools'] })
  assert.equal(info.tools.length, FAKE_TOOLS)
  assert.equal(info.skipped.length, 2)
  assert.ok(info.skipped.some((s) => s.startsWith('`42`')), info.skipped.join('; '))
  assert.ok(info.skipped.some((s) => s.startsWith('bad_schema')), info.skipped.join('; '))
  await agent.close()
})

const FAKE_HTTP = path.join(ROOT, 'tests', 'mcp', 'fake_http_server.py')

async function freePort() {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

// tests/mcp/fake_http_server.py on `port`, once it listens (it prints its
// port first; it runs until its stdin closes).
async function startFakeHttp(port) {
  const child = spawn(PYTHON, [FAKE_HTTP, '--port', String(port)], { stdio: ['pipe', 'pipe', 'ignore'] })
  const [line] = await readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]().next().then((r) => [r.value])
  assert.equal(line.trim(), String(port))
  return child
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

test('an HTTP session is renewed when the server restarts at the same URL', async () => {
  // The MCP spec: a client whose session gets 404 starts a new one.
  const port = await freePort()
  let server = await startFakeHttp(port)
  const agent = await mockAgent([
    toolCall('h__echo', { text: 'before' }),
    'one',
    toolCall('h__echo', { text: 'after' }),
    'two',
  ])
  try {
    await agent.addMcpServer('h', { url: `http://127.0.0.1:${port}/mcp`, bearerToken: 'secret', timeoutMs: 60_000 })
    assert.equal((await agent.chat('go')).toolCalls[0].result, 'echo: before')
    await stop(server)
    server = await startFakeHttp(port)
    const call = (await agent.chat('again')).toolCalls[0]
    assert.equal(call.result, 'echo: after', call.error)
    assert.equal(agent.mcpServers()[0].state, 'running')
  } finally {
    await agent.close()
    await stop(server)
  }
})
