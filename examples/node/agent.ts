// A typed zoo-keeper agent: a calculator tool, streaming, cancellation.
// Type-checked by scripts/test-node (tsc --noEmit); run it with a TypeScript
// runner, e.g. `npx tsx examples/node/agent.ts models/SmolLM2-135M-Instruct.Q4_1.gguf`.
import { Agent, Model, ZooError, ErrorCode, type Response, type StreamItem } from 'zoo-keeper'

interface AddArgs {
  a: number
  b: number
}

async function main(modelPath: string): Promise<void> {
  const model: Model = await Model.load(modelPath)
  const agent = await Agent.create({ model, temperature: 0, maxTokens: 128, toolChoice: 'auto' })
  try {
    agent.registerTool<AddArgs>(
      {
        name: 'add',
        description: 'Add two integers',
        parameters: {
          type: 'object',
          properties: { a: { type: 'integer' }, b: { type: 'integer' } },
          required: ['a', 'b'],
        },
      },
      async ({ a, b }) => a + b,
    )

    const response: Response = await agent.chat('What is 2 + 3?', {
      toolChoice: 'required',
      onToken: (text: string) => process.stdout.write(text),
      onEvent: (event) => {
        if (event.type === 'tool_call_finished') console.log(`\n[${event.name} -> ${JSON.stringify(event.result)}]`)
      },
    })
    console.log(`\n${response.toolCalls.length} tool call(s), ${response.usage.completionTokens} tokens, stop: ${response.stopReason}`)

    const stream = agent.stream('Tell me about the sea.')
    for await (const item of stream as AsyncIterable<StreamItem>) {
      if (item.type === 'token') process.stdout.write(item.text)
    }
    console.log(`\n${(await stream.response).metrics.tokensPerSecond.toFixed(1)} tokens/s`)

    const controller = new AbortController()
    setTimeout(() => controller.abort(), 50)
    try {
      await agent.chat('Write a very long poem.', { signal: controller.signal })
    } catch (error) {
      if (error instanceof ZooError && error.code === ErrorCode.CANCELLED) console.log('aborted:', error.response?.text.length, 'characters')
      else throw error
    }
    for (const message of agent.history()) console.log(message.role, message.content.slice(0, 40))
    await agent.clearHistory()
  } finally {
    await agent.close()
  }
}

main(process.argv[2] ?? 'models/SmolLM2-135M-Instruct.Q4_1.gguf').catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
