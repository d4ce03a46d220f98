// Run by exit tests in a child process: uses an agent (and a tool) and
// never calls close(); the process must still exit by itself.
import { zk, modelPath, toolCall, ADD } from './helpers.mjs'

const real = process.argv[2] === 'model'
const agent = await zk.Agent.create(
  real ? { modelPath: modelPath(), temperature: 0, maxTokens: 64, threads: 2 } : { provider: { type: 'mock', replies: [toolCall('add', { a: 1, b: 2 }), 'three'] } },
)
agent.registerTool(ADD, ({ a, b }) => a + b)
const response = await agent.chat('What is 1 + 2?', { toolChoice: real ? 'add' : undefined })
// The last thing the script does: the parent times the exit from here.
console.log(JSON.stringify({ text: response.text, calls: response.toolCalls.length, exitingAt: Date.now() }))
