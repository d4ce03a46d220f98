// Tool execution strategies through Node, against the clock (not run by
// node --test): one mock reply with four tool calls, each sleeping 200 ms,
// with toolExecution 'sequential' and 'parallel', against the same chat
// with one call. Two kinds of tool: an async function that awaits a 200 ms
// timer (parallel calls overlap: the JavaScript thread is free while they
// wait), and a sync function that blocks for 200 ms (Atomics.wait), which
// holds the one JavaScript thread: its calls cannot overlap, whatever the
// strategy, and the figures show it.
//
// Each round runs every case once, in a rotating order; a fresh agent per
// chat, created outside the timed part. Medians and ratios are printed. The
// issue's goal: parallel within 1.25x one call, sequential about 4x.
//
//   node tests/node/bench_parallel_tools.mjs [ROUNDS]
import { setTimeout as sleep } from 'node:timers/promises'
import { zk, toolCall } from './helpers.mjs'

const SLEEP_MS = 200
const CALLS = 4
const ROUNDS = Number(process.argv[2] ?? 7)
const NAP = { name: 'nap', description: 'Sleeps 200 ms', parameters: { type: 'object', properties: { n: { type: 'integer' } } } }
const blocker = new Int32Array(new SharedArrayBuffer(4))

const KINDS = {
  'async function, awaited timer': async ({ n }) => {
    await sleep(SLEEP_MS)
    return n
  },
  'sync function, blocking wait': ({ n }) => {
    Atomics.wait(blocker, 0, 0, SLEEP_MS)
    return n
  },
}
const CASES = [
  ['one call', 'sequential', 1],
  ['4 calls, sequential', 'sequential', CALLS],
  ['4 calls, parallel', 'parallel', CALLS],
]

async function timed(tool, toolExecution, calls) {
  const reply = Array.from({ length: calls }, (_, n) => toolCall('nap', { n })).join('')
  const agent = await zk.Agent.create({ provider: { type: 'mock', replies: [reply, 'Done.'] }, toolExecution })
  agent.registerTool(NAP, tool)
  const started = performance.now()
  const response = await agent.chat('Nap.')
  const took = performance.now() - started
  await agent.close()
  if (response.text !== 'Done.' || response.toolCalls.length !== calls || response.toolErrors.length) {
    throw new Error(`unexpected response: ${JSON.stringify(response)}`)
  }
  return took
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

console.log(`Node ${process.version}, ${CALLS} calls of a tool sleeping ${SLEEP_MS} ms, ${ROUNDS} rounds, medians:`)
for (const [kind, tool] of Object.entries(KINDS)) {
  const samples = CASES.map(() => [])
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < CASES.length; k++) {
      const i = (r + k) % CASES.length
      const [, execution, calls] = CASES[i]
      samples[i].push(await timed(tool, execution, calls))
    }
  }
  const medians = samples.map(median)
  console.log(`  ${kind}:`)
  CASES.forEach(([name], i) => {
    console.log(`    ${name.padEnd(22)} ${medians[i].toFixed(1).padStart(7)} ms  ${(medians[i] / medians[0]).toFixed(2)}x one call`)
  })
  console.log(`    sequential / parallel: ${(medians[1] / medians[2]).toFixed(2)}x`)
}
