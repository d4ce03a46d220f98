// The real @modelcontextprotocol servers, installed from npm by
// scripts/fetch-mcp-servers (so not in the quick tier, `scripts/test
// --quick`), on the mock provider: server-everything over stdio and
// Streamable HTTP, server-filesystem confined to a temporary folder.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { ROOT, mockAgent, toolCall } from './helpers.mjs'

function npmServer(name) {
  const file = path.join(ROOT, 'tests', 'mcp', 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js')
  if (!existsSync(file)) throw new Error(`${file} is missing: run scripts/fetch-mcp-servers to install the MCP test servers`)
  return file
}

function tempDir() {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'zoo-node-mcp-')))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

test('server-everything over stdio, through the agent', async () => {
  const agent = await mockAgent([toolCall('everything__get-sum', { a: 40, b: 2 }), 'It is 42.'])
  const info = await agent.addMcpServer('everything', { command: process.execPath, args: [npmServer('server-everything'), 'stdio'], timeoutMs: 30_000 })
  assert.ok(info.tools.includes('everything__echo'), info.tools.join(', '))
  const response = await agent.chat('40 + 2?')
  assert.match(String(response.toolCalls[0].result), /42/)
  assert.equal(response.text, 'It is 42.')
  await agent.close()
})

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function waitForPort(port, child, limitMs) {
  const deadline = Date.now() + limitMs
  for (;;) {
    if (child.exitCode !== null) throw new Error('the HTTP server exited at start')
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`the HTTP server did not listen within ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('server-everything over Streamable HTTP, through the agent', async () => {
  const port = await freePort()
  const server = spawn(process.execPath, [npmServer('server-everything'), 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  })
  try {
    await waitForPort(port, server, 60_000)
    const agent = await mockAgent([toolCall('web__echo', { message: 'over HTTP' }), 'ok'])
    const info = await agent.addMcpServer('web', { url: `http://127.0.0.1:${port}/mcp`, bearerToken: 'unused', timeoutMs: 30_000 })
    assert.ok(info.protocolVersion)
    assert.equal((await agent.chat('go')).toolCalls[0].result, 'Echo: over HTTP')
    await agent.close()
  } finally {
    server.kill()
  }
})

test('server-filesystem confined to a temporary folder', async () => {
  const root = tempDir()
  writeFileSync(path.join(root, 'note.txt'), 'a note')
  const agent = await mockAgent([
    toolCall('fs__read_text_file', { path: path.join(root, 'note.txt') }),
    toolCall('fs__read_text_file', { path: '/etc/hostname' }),
    'read it',
  ])
  await agent.addMcpServer('fs', { command: process.execPath, args: [npmServer('server-filesystem'), root], timeoutMs: 30_000 })
  const response = await agent.chat('read the note')
  assert.equal(response.toolCalls[0].result, 'a note')
  assert.equal(typeof response.toolCalls[1].error, 'string')
  assert.equal(response.toolCalls[1].result, undefined)
  await agent.close()
})
