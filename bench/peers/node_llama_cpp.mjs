// One bench-peers run of node-llama-cpp (npm install: its prebuilt llama.cpp
// binaries, the CPU backend it picks at run time).
//
//   node node_llama_cpp.mjs MODEL PROMPT_FILE THREADS CTX N_GEN
//
// The same work and clock points as zoo_node.mjs: the prompt file as one
// user message to a LlamaChatSession (its default chat wrapper for the
// model, resolved from the model's template, with the session's default
// system prompt), greedy, N_GEN tokens at most. LlamaChatSession has no
// ignore-EOS option: the reply may end early (the counts are printed).
// Tokens are counted from onToken's token arrays; the prompt's length from
// the sequence's token meter.
import { readFileSync } from 'node:fs'
import { getLlama, LlamaChatSession } from 'node-llama-cpp'

const [modelPath, promptFile, threads, ctx, nGen] = process.argv.slice(2)
const prompt = readFileSync(promptFile, 'utf8')
// gpu: false, build: 'never': the prebuilt CPU binaries as installed,
// never a local build.
const llama = await getLlama({ gpu: false, build: 'never' })
const model = await llama.loadModel({ modelPath })
const context = await model.createContext({ contextSize: Number(ctx), threads: Number(threads) })
const sequence = context.getSequence()
const session = new LlamaChatSession({ contextSequence: sequence })
const stamps = []
let tokens = 0
const started = performance.now()
const text = await session.prompt(prompt, {
  maxTokens: Number(nGen),
  temperature: 0,
  onToken: (chunk) => {
    // The last call of a reply can carry no token (seen: [] 0.2 ms after
    // the 128th): it is not a token and must not stretch the timing.
    if (chunk.length === 0) return
    stamps.push(performance.now())
    tokens += chunk.length
  },
})
// Read before disposing: a disposed session refuses every getter.
const promptTokens = sequence.tokenMeter.usedInputTokens
const wrapper = session.chatWrapper.wrapperName
await context.dispose()
await model.dispose()
// Its package.json is not among its exports: read it beside dist/index.js.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('node-llama-cpp')), 'utf8'))
console.log(JSON.stringify({
  side: 'node-llama-cpp',
  prompt_tokens: promptTokens,
  gen_tokens: tokens,
  token_callbacks: stamps.length,
  ttft_ms: stamps[0] - started,
  // Cold start: process spawn (the epoch bench-peers took just before)
  // to the first token, on the wall clock.
  cold_ms: performance.timeOrigin + stamps[0] - Number(process.env.BENCH_SPAWNED_NS) / 1e6,
  prompt_tps: (promptTokens * 1000) / (stamps[0] - started),
  gen_tps: ((tokens - 1) * 1000) / (stamps.at(-1) - stamps[0]),
  text_start: text.slice(0, 60),
  build: `node-llama-cpp ${version} (${llama.buildType}, llama.cpp ${llama.llamaCppRelease.release}, ` +
    `chat wrapper ${wrapper}): ${llama.systemInfo.trim()}`,
}))
await llama.dispose()
