// One bench-peers run of Zoo-Keeper's Node package (the npm tarball).
//
//   node zoo_node.mjs MODEL PROMPT_FILE THREADS CTX N_GEN
//
// The same work and the same clock points as zoo_python.py: the prompt file
// as one user message on a fresh agent (the engine applies the model's chat
// template), greedy, up to N_GEN tokens (no ignore-EOS setting: the model
// may end earlier). Prompt tokens/s = prompt tokens / (call to first
// onToken); generation tokens/s = (tokens - 1) / (first to last onToken).
// onToken runs on the JavaScript thread, which is idle while the chat
// runs, so each token reaches it as soon as the inference thread queues it.
import { readFileSync } from 'node:fs'
import { Agent, backendInfo } from 'zoo-keeper'

const [modelPath, promptFile, threads, ctx, nGen] = process.argv.slice(2)
const prompt = readFileSync(promptFile, 'utf8')
const agent = await Agent.create({
  modelPath,
  temperature: 0,
  threads: Number(threads),
  contextSize: Number(ctx),
  maxTokens: Number(nGen),
})
const stamps = []
const started = performance.now()
const response = await agent.chat(prompt, { onToken: () => stamps.push(performance.now()) })
await agent.close()
const { usage, metrics } = response
const info = backendInfo()
console.log(JSON.stringify({
  side: 'zoo-node',
  prompt_tokens: usage.promptTokens,
  cached_tokens: usage.cachedTokens,
  gen_tokens: usage.completionTokens,
  token_callbacks: stamps.length,
  ttft_ms: stamps[0] - started,
  // Cold start: process spawn (the epoch bench-peers took just before)
  // to the first token, on the wall clock.
  cold_ms: performance.timeOrigin + stamps[0] - Number(process.env.BENCH_SPAWNED_NS) / 1e6,
  prompt_tps: (usage.promptTokens * 1000) / (stamps[0] - started),
  gen_tps: ((usage.completionTokens - 1) * 1000) / (stamps.at(-1) - stamps[0]),
  engine_prompt_ms: metrics.promptMs,
  engine_tokens_per_second: metrics.tokensPerSecond,
  text_start: response.text.slice(0, 60),
  build: `zoo-keeper, llama.cpp CPU variant ${info.cpuVariant} (${info.chosenBy}): ${info.features.join(' ')}`,
}))
