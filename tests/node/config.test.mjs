// Config and model-option errors from Node: the same code and the same
// message as C and Python for the same bad input (zoo-core's
// tests/engine/config_errors.rs has the full list), with the key in
// camelCase. The engine is the one validator: the package checks no range.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { zk, mockAgent } from './helpers.mjs'

const { ZooError, ErrorCode } = zk

const MISSING_MODEL = '/nonexistent/zoo/no-such-model.gguf'
const GPU_LAYERS =
  'invalid config `gpuLayers`: expected a whole number from -1 to 2147483647 (-1 offloads every layer), got -2'

// [config, the exact message]: the cases every front door checks.
const CASES = [
  [{ temperature: 'hot' }, 'invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got "hot"'],
  [
    { contextSize: -1 },
    "invalid config `contextSize`: expected 0 (the model's trained context) or a whole number from 64 to 4294967295, got -1",
  ],
  [
    { contextSize: 2 ** 32 },
    "invalid config `contextSize`: expected 0 (the model's trained context) or a whole number from 64 to 4294967295, got 4294967296",
  ],
  [{ gpuLayers: -2 }, GPU_LAYERS],
  [{ threads: 2.5 }, 'invalid config `threads`: expected a whole number from 0 to 1024 (0 follows the free cores), got 2.5'],
  // NaN and Infinity reach the engine (JSON.stringify would turn them into null).
  [{ temperature: NaN }, 'invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got NaN'],
  [
    { repeatPenalty: Infinity },
    'invalid config `repeatPenalty`: expected a finite number > 0 (1 disables it), got Infinity',
  ],
  [{ topP: -Infinity }, 'invalid config `topP`: expected a number greater than 0 and at most 1, got -Infinity'],
  [{ stop: ['ok', NaN] }, 'invalid config `stop[1]`: expected a non-empty string, got NaN'],
  [{ maxTokens: 0 }, 'invalid config `maxTokens`: expected null (no limit) or a whole number from 1 to 4294967295, got 0'],
]

test('bad config values name the key (camelCase) and the rule', async () => {
  for (const [config, message] of CASES) {
    await assert.rejects(mockAgent([], config), (error) => {
      assert.ok(error instanceof ZooError, String(error))
      assert.equal(error.code, ErrorCode.INVALID_CONFIG, `${JSON.stringify(config)}: ${error.message}`)
      assert.equal(error.message, message)
      return true
    })
  }
})

test('an unknown key is named, and the known keys are listed in camelCase', async () => {
  await assert.rejects(mockAgent([], { temprature: 0.5 }), (error) => {
    assert.equal(error.code, ErrorCode.INVALID_CONFIG)
    assert.ok(
      error.message.startsWith('invalid config `temprature`: unknown key; the config keys are `modelPath`, `contextSize`, '),
      error.message,
    )
    return true
  })
})

test('a config that is not an object is refused by the engine, as in C and Python', async () => {
  const message = 'invalid config `config`: expected a JSON object such as {"model_path": "model.gguf"}, got'
  for (const [config, got] of [[[1], 'an array'], [42, 'a number'], [null, 'null'], ['x', 'a string']]) {
    await assert.rejects(zk.Agent.create(config), { code: ErrorCode.INVALID_CONFIG, message: `${message} ${got}` })
  }
})

test('Model.load options are checked by the engine: invalid_config naming the key, as in C', async () => {
  await assert.rejects(zk.Model.load(MISSING_MODEL, { gpuLayers: -2 }), { code: ErrorCode.INVALID_CONFIG, message: GPU_LAYERS })
  await assert.rejects(zk.Model.load(MISSING_MODEL, { gpuLayers: NaN }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `gpuLayers`: expected a whole number from -1 to 2147483647 (-1 offloads every layer), got NaN',
  })
  await assert.rejects(zk.Model.load(MISSING_MODEL, { useMmap: 'yes' }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `useMmap`: expected true or false, got "yes"',
  })
  await assert.rejects(zk.Model.load(MISSING_MODEL, { gpuLayer: 1 }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `gpuLayer`: unknown key; the model_params keys are `gpuLayers`, `useMmap`, `cpuVariant`',
  })
  // Good options reach the loader, which names the missing file.
  await assert.rejects(zk.Model.load(MISSING_MODEL, { gpuLayers: -1, useMmap: false }), { code: ErrorCode.MODEL_LOAD_FAILED })
})

test('good values in every JavaScript form are accepted', async () => {
  const agent = await mockAgent(['ok'], { contextSize: 4096n, seed: null, maxTokens: undefined, stop: ['END'], temperature: 0 })
  assert.equal((await agent.chat('hi')).text, 'ok')
  await agent.close()
  // A value JSON has no form for is named, not dropped.
  await assert.rejects(mockAgent([], { temperature: () => 1 }), {
    code: ErrorCode.INVALID_CONFIG,
    message: 'invalid config `temperature`: expected a JSON value, got function',
  })
})
