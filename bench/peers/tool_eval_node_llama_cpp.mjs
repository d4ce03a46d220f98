// examples/rust/tool_eval.rs's tool-call evaluation through node-llama-cpp,
// for the side-by-side (issue 18, point 5): the same cases
// (tests/eval/tool_cases.json), tool sets (tests/eval/tool_sets.json), model
// and scoring (tool_eval_summary.py's `verdicts`, mirrored in `verdicts`
// below).
//
//   cp bench/peers/tool_eval_node_llama_cpp.mjs DIR/   # DIR: npm install of bench/peers/package.json
//   ZOO_EVAL_THREADS=1 node DIR/tool_eval_node_llama_cpp.mjs --split report --out node_llama_cpp.jsonl
//   python3 bench/peers/tool_eval_summary.py node_llama_cpp.jsonl
//
// Run from the repository's root (--root to say otherwise); the script sits
// beside node_modules so that it imports the pinned node-llama-cpp, as
// scripts/bench-peers does. Options: --split report|tune|all, --mode
// required|auto (default both), --model PATH (default SmolLM2-135M Q4_1),
// --limit N (the first N cases), --out FILE (JSON lines; default stdout).
//
// Each case is a fresh LlamaChatSession on the one context (4096 tokens,
// ZOO_EVAL_THREADS threads, default 1): system prompt "You are a helpful
// assistant.", the case's prompt, the case's tool set as `functions`
// (defineChatSessionFunction, the JSON schemas as they are), greedy
// (temperature 0, and its default repeat penalty of 1.1 turned off, as
// tool_eval has none), maxTokens 96, the chat wrapper it resolves for the
// model. node-llama-cpp has no tool_choice: the model may always answer in
// prose, so only `auto` is measured (`required` is recorded as not
// supported). A function's handler records the call and aborts the prompt
// (stopOnAbortSignal), so nothing is generated after the first call. A call
// begun but not finished (cut by maxTokens) is an invalid call.
import { openSync, readFileSync, writeSync } from 'node:fs'
import { basename } from 'node:path'
import { parseArgs } from 'node:util'
import { defineChatSessionFunction, getLlama, LlamaChatSession } from 'node-llama-cpp'

const SYSTEM = 'You are a helpful assistant.'
const SEED = 42
const { values: opts } = parseArgs({
  options: {
    split: { type: 'string', default: 'report' },
    mode: { type: 'string' },
    model: { type: 'string' },
    limit: { type: 'string' },
    out: { type: 'string' },
    root: { type: 'string', default: process.cwd() },
  },
})

// tool_eval.rs's `Tally::record`, as tool_eval_summary.py's `verdicts`.
const MARKUP = ['<tool_call>', '</tool_call>', '<tool_response>', '[TOOL_CALLS]']
const PEER_MARKUP = /functions\.\w+:|\|\|call:/
const asciiLower = (s) => s.trim().replace(/[A-Z]/g, (c) => c.toLowerCase())
function valueMatches (want, got) {
  if (typeof want === 'string' && typeof got === 'string') return asciiLower(want) === asciiLower(got)
  if (typeof want === 'number' && typeof got === 'number') return want === got
  return JSON.stringify(want) === JSON.stringify(got)
}
function verdicts (c, calls, failures, content) {
  const one = calls.length === 1 ? calls[0] : null
  if (c.tool != null) {
    const rightTool = one != null && one.name === c.tool
    const rightArguments = rightTool && Object.entries(c.arguments ?? {})
      .every(([key, want]) => key in one.arguments && valueMatches(want, one.arguments[key]))
    return { right_tool: rightTool, right_arguments: rightArguments, prose_when_none: null,
      all_right: rightArguments, invalid_calls: failures.length, markup_in_prose: null }
  }
  const prose = calls.length === 0 && failures.length === 0
  const markup = prose && (MARKUP.some((m) => content.includes(m)) || PEER_MARKUP.test(content))
  return { right_tool: null, right_arguments: null, prose_when_none: prose,
    all_right: prose, invalid_calls: failures.length, markup_in_prose: markup }
}

const root = opts.root
const sets = JSON.parse(readFileSync(`${root}/tests/eval/tool_sets.json`, 'utf8'))
const cases = JSON.parse(readFileSync(`${root}/tests/eval/tool_cases.json`, 'utf8')).cases
  .filter((c) => opts.split === 'all' || c.split === opts.split)
  .slice(0, opts.limit ? Number(opts.limit) : undefined)
const threads = Number(process.env.ZOO_EVAL_THREADS ?? 1)
const out = opts.out ? openSync(opts.out, 'w') : 1
const write = (record) => writeSync(out, JSON.stringify(record) + '\n')
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('node-llama-cpp')), 'utf8'))
const side = `node-llama-cpp ${version}`

// gpu: false, build: 'never': the prebuilt CPU binaries as installed.
const llama = await getLlama({ gpu: false, build: 'never' })
const modelPath = opts.model ?? `${root}/models/SmolLM2-135M-Instruct.Q4_1.gguf`
const model = await llama.loadModel({ modelPath })
const context = await model.createContext({ contextSize: 4096, threads })
const sequence = context.getSequence()

for (const mode of opts.mode ? [opts.mode] : ['required', 'auto']) {
  if (mode !== 'auto') {
    const note = 'no tool_choice: LlamaChatSession offers the functions and the model may answer in prose'
    write({ side, mode, unsupported: note })
    console.error(`${mode}: ${note}; not measured`)
    continue
  }
  for (const [i, c] of cases.entries()) {
    const calls = []
    const begun = new Map() // callIndex -> the call's name and params text, as generated
    const stop = new AbortController()
    const functions = Object.fromEntries(sets[c.set].map((tool) => [tool.name, defineChatSessionFunction({
      description: tool.description,
      params: tool.parameters,
      handler (params) {
        calls.push({ name: tool.name, arguments: params ?? {} })
        stop.abort()
        return 'done'
      },
    })]))
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: SYSTEM })
    let content = ''
    let error = null
    const started = performance.now()
    try {
      content = await session.prompt(c.prompt, {
        functions,
        maxParallelFunctionCalls: 1,
        maxTokens: 96,
        temperature: 0,
        repeatPenalty: false,
        seed: SEED,
        signal: stop.signal,
        stopOnAbortSignal: true,
        onFunctionCallParamsChunk: ({ callIndex, functionName, paramsChunk }) => {
          const call = begun.get(callIndex) ?? { name: functionName, params: '' }
          call.params += paramsChunk
          begun.set(callIndex, call)
        },
      })
    } catch (e) {
      error = String(e)
    }
    const seconds = (performance.now() - started) / 1000
    const wrapper = session.chatWrapper.wrapperName
    session.dispose()
    const failures = [...begun.entries()].filter(([index]) => index >= calls.length).map(([, call]) => call)
    const verdict = verdicts(c, calls, error ? [error] : failures, content)
    if (error) verdict.invalid_calls = 0
    const raw = { text: content, calls: [...begun.values()], wrapper }
    write({ side, mode, model: basename(modelPath), ...c, raw, calls, failures, content, error,
      seconds: Math.round(seconds * 1000) / 1000, ...verdict })
    console.error(`${mode} ${i + 1}/${cases.length} ${seconds.toFixed(1)} s | ${c.prompt} -> ` +
      JSON.stringify(calls.length ? calls : failures.length ? failures : content))
  }
}
await context.dispose()
await model.dispose()
await llama.dispose()
