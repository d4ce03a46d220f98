// The Node package on the real default model (SmolLM2-135M): JS tools
// called with valid arguments (constrained by the tools' grammar), token
// ordering, AbortSignal, a throwing tool, a shared Model, process exit.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import path from 'node:path'
import { zk, modelPath, ADD, PACKAGE_PATH } from './helpers.mjs'

const { ZooError, ErrorCode } = zk
const BASE = { temperature: 0, threads: 2, contextSize: 2048 }
let model

before(async () => {
  model = await zk.Model.load(modelPath())
})

after(() => {
  model = undefined
})

test('Model.load exposes path and metadata', () => {
  assert.equal(model.path, modelPath())
  assert.equal(typeof model.metadata.chatTemplate, 'string')
  assert.equal(model.metadata.architecture, 'llama')
  assert.equal(model.metadata.special.eos, '<|im_end|>')
})

test('backendInfo() reports the CPU variant loaded from beside the native module', async () => {
  // The model loaded in before() chose llama.cpp's CPU variant: the best.
  const info = zk.backendInfo()
  assert.deepEqual(Object.keys(info).sort(), ['chosenBy', 'cpuVariant', 'directory', 'features', 'refused', 'usable'])
  assert.equal(info.chosenBy, 'best')
  assert.equal(info.cpuVariant, info.usable[0])
  assert.ok(info.usable.includes('x64') && info.features.length > 0, JSON.stringify(info))
  // PACKAGE_PATH is the package's lib/zoo-keeper.js, as resolved (symbolic links followed).
  assert.equal(info.directory, path.join(fs.realpathSync(path.dirname(path.dirname(PACKAGE_PATH))), 'zoo-backends'))
  for (const refused of info.refused) assert.deepEqual(Object.keys(refused).sort(), ['reason', 'variant'])
  // One variant per process: another is a config error, the running one is fine.
  const other = info.cpuVariant === 'x64' ? 'haswell' : 'x64'
  await assert.rejects(zk.Model.load(modelPath(), { cpuVariant: other }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /already runs llama\.cpp's `.*` CPU variant/,
  })
  await assert.rejects(zk.Model.load(modelPath(), { cpuVariant: 'pentium' }), {
    code: ErrorCode.INVALID_CONFIG,
    message: /invalid config `cpuVariant`: unknown CPU variant `pentium`/,
  })
  await zk.Model.load(modelPath(), { cpuVariant: info.cpuVariant })
})

test('a sync JS tool is called with valid arguments', async () => {
  const agent = await zk.Agent.create({ model, ...BASE, maxTokens: 64 })
  const calls = []
  agent.registerTool(ADD, (args) => {
    calls.push(args)
    return { sum: args.a + args.b }
  })
  const response = await agent.chat('What is 17 + 25? Use the add tool.', { toolChoice: 'add', maxTokens: 64 })
  assert.ok(calls.length >= 1, 'the tool was not called')
  for (const args of calls) {
    assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), JSON.stringify(args))
    assert.deepEqual(Object.keys(args).sort(), ['a', 'b'])
  }
  assert.deepEqual(response.toolCalls[0].arguments, calls[0])
  assert.deepEqual(response.toolCalls[0].result, { sum: calls[0].a + calls[0].b })
  assert.equal(response.toolErrors.length, 0)
  await agent.close()
})

test('an async JS tool is awaited with valid arguments', async () => {
  const agent = await zk.Agent.create({ model, ...BASE, maxTokens: 64 })
  const calls = []
  agent.registerTool(
    { name: 'get_weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    async (args) => {
      calls.push(args)
      await new Promise((resolve) => setTimeout(resolve, 10))
      return `17 degrees in ${args.city}`
    },
  )
  const response = await agent.chat('What is the weather in Paris?', { toolChoice: 'required' })
  assert.ok(calls.length >= 1)
  assert.equal(typeof calls[0].city, 'string')
  assert.ok(calls[0].city.length > 0)
  assert.equal(response.toolCalls[0].result, `17 degrees in ${calls[0].city}`)
  await agent.close()
})

test('a throwing tool becomes a tool error and the chat goes on', async () => {
  const agent = await zk.Agent.create({ model, ...BASE, maxTokens: 48, maxToolRetries: 0 })
  let called = 0
  agent.registerTool(ADD, () => {
    called++
    throw new Error('the calculator is broken')
  })
  const response = await agent.chat('What is 2 + 2?', { toolChoice: 'add' })
  assert.ok(called >= 1)
  assert.ok(response.toolErrors.length >= 1)
  assert.equal(response.toolErrors[0].kind, 'tool_handler_failed')
  assert.match(response.toolErrors[0].message, /Error: the calculator is broken/)
  assert.ok(['stop', 'length', 'tool_limit'].includes(response.stopReason))
  await agent.close()
})

test('every onToken has run when the Promise resolves', async () => {
  const agent = await zk.Agent.create({ model, ...BASE, maxTokens: 200 })
  let text = ''
  let count = 0
  const response = await agent.chat('Write a long story about a lighthouse keeper.', {
    onToken: (t) => {
      text += t
      count++
    },
  })
  assert.ok(count > 20)
  assert.equal(text, response.text)
  await agent.close()
})

test('an AbortSignal cancels a real generation quickly', async () => {
  const agent = await zk.Agent.create({ model, ...BASE })
  const controller = new AbortController()
  let abortedAt = 0
  const chat = agent.chat('Write a very long story about the sea, with many chapters.', {
    signal: controller.signal,
    onToken: () => {
      if (!abortedAt) {
        abortedAt = Date.now()
        controller.abort()
      }
    },
  })
  await assert.rejects(chat, (error) => {
    assert.ok(error instanceof ZooError)
    assert.equal(error.code, ErrorCode.CANCELLED)
    assert.equal(error.response.stopReason, 'cancelled')
    return true
  })
  assert.ok(Date.now() - abortedAt < 1000, `took ${Date.now() - abortedAt} ms`)
  // The agent answers the next chat.
  const next = await agent.chat('Say hi.', { maxTokens: 8 })
  assert.ok(next.text.length > 0)
  await agent.close()
})

test('two agents share one model, each with its own history, concurrently', async () => {
  const [a, b] = await Promise.all([
    zk.Agent.create({ model, ...BASE, maxTokens: 16 }),
    zk.Agent.create({ model, ...BASE, maxTokens: 16 }),
  ])
  const [ra, rb] = await Promise.all([a.chat('Name a color.'), b.chat('Name a color.')])
  assert.ok(ra.text.length > 0)
  assert.equal(ra.text, rb.text, 'greedy decoding of the same prompt differs between agents')
  await a.chat('Name an animal.')
  assert.equal(a.history().length, 4)
  assert.equal(b.history().length, 2)
  await Promise.all([a.close(), b.close()])
})

test('stream() on the model yields the reply text', async () => {
  const agent = await zk.Agent.create({ model, ...BASE, maxTokens: 24 })
  let text = ''
  const stream = agent.stream('Tell me about cats.')
  for await (const item of stream) if (item.type === 'token') text += item.text
  assert.equal(text, (await stream.response).text)
  await agent.close()
})

test('a real-model script that never calls close() exits by itself', () => {
  // The exit is timed from the child's last line. Before it, the child loads
  // the model and runs a tool call: seconds when idle, over a minute beside
  // busy processes, so the 600 s limit only catches a hang.
  const child = spawnSync(process.execPath, [fileURLToPath(new URL('./exit_child.mjs', import.meta.url)), 'model'], {
    timeout: 600_000,
    encoding: 'utf8',
    env: process.env,
  })
  const ended = Date.now()
  assert.equal(child.error, undefined, 'the child did not exit within 600 s')
  assert.equal(child.status, 0, child.stderr)
  const { calls, exitingAt } = JSON.parse(child.stdout.trim())
  assert.ok(calls >= 1, child.stdout)
  assert.ok(ended - exitingAt < 10_000, `the exit took ${ended - exitingAt} ms`)
})

test('a runaway chat template fails the chat with the engine error and close is prompt', async () => {
  // 10^12 loop steps: the template runs out of fuel.
  const template =
    '{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}'
  const agent = await zk.Agent.create({ model, ...BASE, template })
  for (let i = 0; i < 2; i++) {
    const started = Date.now()
    await assert.rejects(agent.chat('Hi'), (error) => {
      assert.equal(error.code, ErrorCode.INVALID_CONFIG)
      assert.match(error.message, /^invalid config `template`: .*ran out of fuel/)
      return true
    })
    assert.ok(Date.now() - started < 30000)
  }
  const started = Date.now()
  assert.equal(await agent.close(), true)
  assert.ok(Date.now() - started < 30000)
})
