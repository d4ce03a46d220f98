// The long chat of examples/rust/long_chat.rs on node-llama-cpp: the same
// prompts, system prompt and reply length (both read
// examples/rust/long_chat.json), greedy, the same window and thread count,
// through LlamaChatSession with its default context shift strategy
// ("eraseFirstResponseAndKeepFirstSystem", what its users get). Prints each
// turn and the median time to first token over the same turns as
// long_chat.rs (turns counted from 1; the last 70 % of them), in the same
// form. scripts/bench-long-chat-peer installs node-llama-cpp (pinned in
// package.json beside this file) and runs both sides at once.
//
//   node bench/long_chat_peer/long_chat.mjs MODEL [TURNS [WINDOW [THREADS]]]
//
// NODE_LLAMA_CPP_DIR is the folder whose node_modules holds node-llama-cpp
// (default: target/peers/node-llama-cpp of this checkout).
//
// Time to first token: from the call of session.prompt() to its first
// onToken callback, so it includes what node-llama-cpp does before decoding
// (fitting the history into the window, tokenizing, comparing with the
// cached tokens). A turn "decoded most of its prompt again" when the tokens
// the sequence evaluated before the first reply token (its token meter) are
// more than half of the prompt, the rule long_chat.rs applies to zoo-keeper's
// cached-token count.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const script = JSON.parse(readFileSync(path.join(root, 'examples', 'rust', 'long_chat.json'), 'utf8'))

const [modelPath, turnsArg, windowArg, threadsArg] = process.argv.slice(2)
if (!modelPath) {
  console.error('usage: node bench/long_chat_peer/long_chat.mjs MODEL [TURNS [WINDOW [THREADS]]]')
  process.exit(2)
}
const turns = Number(turnsArg ?? script.prompts.length)
const window = Number(windowArg ?? 2048)
const threads = Number(threadsArg ?? 1)
if (!Number.isInteger(turns) || turns < 1 || turns > script.prompts.length) {
  console.error(`turns must be from 1 to ${script.prompts.length} (the prompts in long_chat.json), not ${turnsArg}`)
  process.exit(2)
}
const from = Math.floor((turns * 3) / 10)
const verbose = Boolean(process.env.ZOO_VERBOSE)

const peerDir = process.env.NODE_LLAMA_CPP_DIR ?? path.join(root, 'target', 'peers', 'node-llama-cpp')
const peerPackage = path.join(peerDir, 'node_modules', 'node-llama-cpp')
const { version } = JSON.parse(readFileSync(path.join(peerPackage, 'package.json'), 'utf8'))
const { getLlama, LlamaChatSession, LlamaLogLevel } = await import(
  pathToFileURL(path.join(peerPackage, 'dist', 'index.js')).href
)

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error })
const model = await llama.loadModel({ modelPath })
// The same batch size as zoo-keeper's default (512).
const context = await model.createContext({ contextSize: window, threads, batchSize: 512 })
const sequence = context.getSequence()
const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: script.system_prompt })

const ttft = []
let fullDecodes = 0
for (let turn = 0; turn < turns; turn++) {
  const meter = sequence.tokenMeter
  const inputBefore = meter.usedInputTokens
  const outputBefore = meter.usedOutputTokens
  let first = 0
  let evaluated = 0
  let promptTokens = 0
  const started = performance.now()
  await session.prompt(script.prompts[turn], {
    maxTokens: script.max_tokens,
    temperature: 0,
    // zoo-keeper's default repeat_penalty is 1.0 (off): plain greedy on both sides.
    repeatPenalty: false,
    onToken: () => {
      if (first) return
      first = performance.now()
      // Reply tokens already fed back by now are not part of the prompt.
      const fedBack = Math.max(0, meter.usedOutputTokens - outputBefore - 1)
      evaluated = meter.usedInputTokens - inputBefore - fedBack
      promptTokens = sequence.contextTokens.length - fedBack
    },
  })
  const replyTokens = meter.usedOutputTokens - outputBefore
  const ms = first - started
  if (verbose) {
    console.error(
      `node-llama-cpp: turn ${turn + 1}: ${promptTokens} prompt tokens, ${promptTokens - evaluated} cached, ` +
        `${replyTokens} reply tokens, ${ms.toFixed(0)} ms to the first token`,
    )
  }
  if (turn >= from) {
    ttft.push(ms)
    if (evaluated * 2 > promptTokens) fullDecodes++
  }
}
const late = [...ttft].sort((a, b) => a - b)
// The upper middle for an even count, as long_chat.rs takes it.
const median = late[late.length >> 1]
console.log(
  `node-llama-cpp ${version}: median time to first token over turns ${from + 1}-${turns}: ${median.toFixed(0)} ms; ` +
    `turns decoding most of their prompt again: ${fullDecodes} of ${late.length}`,
)
await context.dispose()
await model.dispose()
await llama.dispose()
