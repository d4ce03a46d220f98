// Shared by the Node tests: the installed package, the model path, helpers.
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

// The package as a consumer installed it (`npm install ./node` in
// scripts/test-node), not the source folder.
export const CONSUMER = path.resolve(process.env.ZOO_NODE_CONSUMER ?? path.join(ROOT, 'target', 'node-consumer'))
if (!existsSync(path.join(CONSUMER, 'node_modules', 'zoo-keeper'))) {
  throw new Error(`zoo-keeper is not installed in ${CONSUMER}: run scripts/test-node`)
}
export const consumerRequire = createRequire(path.join(CONSUMER, 'package.json'))
export const zk = consumerRequire('zoo-keeper')
export const PACKAGE_PATH = consumerRequire.resolve('zoo-keeper')

export function modelPath(name = 'SmolLM2-135M-Instruct.Q4_1.gguf') {
  // The quick tier (scripts/test --quick) runs no file that needs the
  // model: a test that gets here there belongs in model.test.mjs.
  if (process.env.ZOO_TEST_QUICK === '1') {
    throw new Error('this test needs the model: put it in model.test.mjs (the quick tier runs without it)')
  }
  const file = path.join(process.env.ZOO_MODELS_DIR ?? path.join(ROOT, 'models'), name)
  if (!existsSync(file)) throw new Error(`${file} is missing: run scripts/fetch-models first`)
  return file
}

/** A scripted mock reply that calls a tool (Hermes format). */
export function toolCall(name, args) {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`
}

/** An agent on the mock provider: `replies` in order, `pieceDelayMs` before each streamed word. */
export function mockAgent(replies, config = {}, pieceDelayMs = 0) {
  return zk.Agent.create({ provider: { type: 'mock', replies, pieceDelayMs }, ...config })
}

export const ADD = {
  name: 'add',
  description: 'Add two integers',
  parameters: {
    type: 'object',
    properties: { a: { type: 'integer', description: 'first' }, b: { type: 'integer', description: 'second' } },
    required: ['a', 'b'],
  },
}
