// The package's TypeScript declarations: examples/node/agent.ts compiles
// against them with `tsc --noEmit --strict`, and misuse does not.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { ROOT, CONSUMER, consumerRequire } from './helpers.mjs'

const tsc = consumerRequire.resolve('typescript/bin/tsc')

function typecheck(files) {
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-'))
  try {
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [path.join(CONSUMER, 'node_modules', '@types')],
          baseUrl: '.',
          paths: { 'zoo-keeper': [path.join(CONSUMER, 'node_modules', 'zoo-keeper')] },
        },
        files: files.map((f) => (path.isAbsolute(f) ? f : path.join(dir, f))),
      }),
    )
    return { dir, run: spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' }) }
  } finally {
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  }
}

test('examples/node/agent.ts compiles against index.d.ts and lib/zoo-keeper.d.ts', () => {
  const { run } = typecheck([path.join(ROOT, 'examples', 'node', 'agent.ts'), path.join(CONSUMER, 'node_modules', 'zoo-keeper', 'index.d.ts')])
  assert.equal(run.status, 0, run.stdout + run.stderr)
})

/** Type-checks one file of the given lines, written to a fresh folder. */
function typecheckLines(name, lines) {
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-src-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, name)
  writeFileSync(file, lines.join('\n'))
  return typecheck([file]).run
}

test('misuse of the API is a type error', () => {
  const run = typecheckLines('bad.ts', [
    "import { Agent } from 'zoo-keeper'",
    'async function f(): Promise<void> {',
    "  const agent = await Agent.create({ modelPath: 'm.gguf', threads: 'two' })",
    "  const r = await agent.chat('hi', { onToken: (t: number) => t })",
    '  const n: number = r.text',
    "  agent.registerTool({ description: 'no name' }, () => 1)",
    "  await agent.addMcpServer('x', { args: ['no command or url'] })",
    "  const tools: number = agent.mcpServers()[0].tools",
    '}',
    'void f',
  ])
  assert.notEqual(run.status, 0)
  const output = run.stdout + run.stderr
  assert.match(output, /bad\.ts\(3,/)
  assert.match(output, /bad\.ts\(4,/)
  assert.match(output, /bad\.ts\(5,/)
  assert.match(output, /bad\.ts\(6,/)
  assert.match(output, /bad\.ts\(7,/)
  assert.match(output, /bad\.ts\(8,/)
})

test('MCP servers of both kinds type-check', () => {
  const run = typecheckLines('mcp.ts', [
    "import { Agent, type McpServerInfo } from 'zoo-keeper'",
    'async function f(agent: Agent): Promise<string[]> {',
    "  const a: McpServerInfo = await agent.addMcpServer('files', { command: 'npx', args: ['-y', 'server'], env: { A: '1' }, cwd: '/tmp', timeoutMs: 5000 })",
    "  await agent.addMcpServer('web', { url: 'http://127.0.0.1:1/mcp', bearerToken: 't', headers: { 'X-A': 'b' } })",
    "  const removed: boolean = await agent.removeMcpServer('web')",
    '  void removed',
    '  return [a.serverName, a.protocolVersion, ...agent.mcpServers().flatMap((s) => s.tools)]',
    '}',
    'void f',
  ])
  assert.equal(run.status, 0, run.stdout + run.stderr)
})

test('the mock and remote providers and the retry event type-check, and misspelt ones do not', () => {
  // One tsc run for both files (each run takes seconds): the good one must
  // have no error, each line of the bad one must.
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-src-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const good = path.join(dir, 'provider.ts')
  const bad = path.join(dir, 'bad_provider.ts')
  writeFileSync(good, [
    "import { Agent, type Provider } from 'zoo-keeper'",
    "const mock: Provider = { type: 'mock', replies: ['Hello!', { error: 'boom' }], pieceDelayMs: 5 }",
    'export const agent = Agent.create({ provider: mock, temperature: 0 })',
    "const claude: Provider = { type: 'anthropic', model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY', thinking: 'low' }",
    "const gemini: Provider = { type: 'gemini', model: 'gemini-2.5-flash', maxRetries: 3, thinking: 'off' }",
    'export const remote = [Agent.create({ provider: claude }), Agent.create({ provider: gemini })]',
    "export const delays = (e: import('zoo-keeper').AgentEvent) => (e.type === 'retry' ? e.delayMs + (e.status ?? 0) : 0)",
  ].join('\n'))
  writeFileSync(bad, [
    "import { Agent } from 'zoo-keeper'",
    "export const a = Agent.create({ provider: { type: 'mock', replies: [42] } })",
    "export const b = Agent.create({ provider: { type: 'mock', piece_delay_ms: 5 } })",
    "export const c = Agent.create({ provider: { type: 'gpt' } })",
    "export const d = Agent.create({ provider: { type: 'anthropic' } })",
    "export const e = Agent.create({ provider: { type: 'gemini', model: 'm', thinking: 'max' } })",
  ].join('\n'))
  const { run } = typecheck([good, bad])
  const output = run.stdout + run.stderr
  assert.notEqual(run.status, 0)
  assert.doesNotMatch(output, /(^|[^_])provider\.ts\(/m, output)
  assert.match(output, /bad_provider\.ts\(2,/)
  assert.match(output, /bad_provider\.ts\(3,/)
  assert.match(output, /bad_provider\.ts\(4,/)
  assert.match(output, /bad_provider\.ts\(5,/)
  assert.match(output, /bad_provider\.ts\(6,/)
})

test('tool contexts and their events type-check, and misuse does not', () => {
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-src-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const good = path.join(dir, 'context.ts')
  const bad = path.join(dir, 'bad_context.ts')
  writeFileSync(good, [
    "import { Agent, ToolContext, type AgentEvent, type SubAgentUpdate } from 'zoo-keeper'",
    'export async function f(agent: Agent): Promise<void> {',
    "  agent.registerTool({ name: 'crawl', timeoutMs: 1000 }, async (args: { url: string }, ctx: ToolContext) => {",
    '    const signal: AbortSignal = ctx.signal',
    '    const taken: boolean = ctx.update({ pages: 1 }) && ctx.progress(`${ctx.callId}: ${args.url}`)',
    '    return signal.aborted ? null : taken',
    '  })',
    '  const onEvent = (e: AgentEvent): void => {',
    "    if (e.type === 'tool_call_update') { const step = e.update as SubAgentUpdate; if (step.event === 'turn_finished') console.log(step.usage.total_tokens, e.id) }",
    "    if (e.type === 'tool_call_progress') { const text: string = e.text; console.log(text, e.name) }",
    '  }',
    "  await agent.chat('go', { onEvent })",
    '}',
  ].join('\n'))
  writeFileSync(bad, [
    "import { Agent } from 'zoo-keeper'",
    "export function g(agent: Agent): void { agent.registerTool({ name: 't' }, (args, ctx) => ctx.progress(42)) }",
    "export function h(agent: Agent): void { agent.registerTool({ name: 't' }, (args, ctx) => { const id: number = ctx.callId; return id }) }",
    "export function i(agent: Agent): void { agent.registerTool({ name: 't' }, (args, ctx) => { ctx.signal = new AbortController().signal }) }",
  ].join('\n'))
  const { run } = typecheck([good, bad])
  const output = run.stdout + run.stderr
  assert.notEqual(run.status, 0)
  assert.doesNotMatch(output, /(^|[^_])context\.ts\(/m, output)
  assert.match(output, /bad_context\.ts\(2,/)
  assert.match(output, /bad_context\.ts\(3,/)
  assert.match(output, /bad_context\.ts\(4,/)
})

test('logs and per-chat hooks type-check, and their misuse does not', () => {
  const ok = typecheckLines('logs.ts', [
    "import { Agent, setLogger, setLogLevel, droppedLogs, flushLogs, type LogRecord } from 'zoo-keeper'",
    'async function f(agent: Agent): Promise<number> {',
    "  setLogger((record: LogRecord) => console.log(record.target, record.message, record.fields.chatId), { level: 'debug' })",
    "  setLogLevel('info')",
    "  await agent.chat('hi', { hooks: { beforeToolCall: (call) => (call.name === 'rm' ? { action: 'deny', reason: 'no' } : undefined) } })",
    "  await agent.chat('hi', { hooks: {} })",
    '  const flushed: boolean = await flushLogs({ timeoutMs: 100 })',
    '  setLogger(null)',
    '  return droppedLogs() + (flushed ? 1 : 0)',
    '}',
    'void f',
  ])
  assert.equal(ok.status, 0, ok.stdout + ok.stderr)
  const bad = typecheckLines('bad_logs.ts', [
    "import { setLogger, setLogLevel } from 'zoo-keeper'",
    "setLogger((record: string) => record, { level: 'info' })",
    "setLogLevel('loud')",
  ])
  assert.notEqual(bad.status, 0)
  const output = bad.stdout + bad.stderr
  assert.match(output, /bad_logs\.ts\(2,/)
  assert.match(output, /bad_logs\.ts\(3,/)
})

test('a context strategy of your own type-checks, and a wrong one does not', () => {
  const ok = typecheckLines('strategy.ts', [
    "import { Agent, type ContextRequest, type Message } from 'zoo-keeper'",
    'const keep = (request: ContextRequest): Message[] => [',
    "  { role: 'assistant', content: `(${request.currentTurn} messages, ${request.tokens.length} counted, budget ${request.budget - request.systemTokens})` },",
    '  ...request.messages.slice(request.currentTurn),',
    ']',
    'async function f(): Promise<void> {',
    "  const agent = await Agent.create({ provider: { type: 'mock' }, contextStrategy: keep })",
    '  agent.setHooks({ contextStrategy: async () => undefined })',
    "  await agent.chat('hi', { onEvent: (e) => { if (e.type === 'history_compacted' && e.level === 'custom') console.log(e.tokensAfter) } })",
    '}',
    'void f',
  ])
  assert.equal(ok.status, 0, ok.stdout + ok.stderr)
  const bad = typecheckLines('bad_strategy.ts', [
    "import { Agent } from 'zoo-keeper'",
    "void Agent.create({ provider: { type: 'mock' }, contextStrategy: (request: { messages: string }) => request.messages })",
    "void Agent.create({ provider: { type: 'mock' }, contextStrategy: () => 'fifo' })",
  ])
  assert.notEqual(bad.status, 0)
  const output = bad.stdout + bad.stderr
  assert.match(output, /bad_strategy\.ts\(2,/)
  assert.match(output, /bad_strategy\.ts\(3,/)
})

test('a summarizer config type-checks, and a wrong one does not', () => {
  const ok = typecheckLines('summarizer.ts', [
    "import { Agent, type SummarizerConfig } from 'zoo-keeper'",
    "const summarizer: SummarizerConfig = { provider: { type: 'mock', replies: ['ok'] }, maxTokens: 64, systemPrompt: 'Summarize.' }",
    "void Agent.create({ provider: { type: 'mock' }, maxToolResultTokens: 40, summarizer })",
    "void Agent.create({ provider: { type: 'mock' }, summarizer: null })",
  ])
  assert.equal(ok.status, 0, ok.stdout + ok.stderr)
  const bad = typecheckLines('bad_summarizer.ts', [
    "import { Agent } from 'zoo-keeper'",
    "void Agent.create({ provider: { type: 'mock' }, summarizer: { maxTokens: '64' } })",
    "void Agent.create({ provider: { type: 'mock' }, summarizer: { model: 'x' } })",
  ])
  assert.notEqual(bad.status, 0)
  const output = bad.stdout + bad.stderr
  assert.match(output, /bad_summarizer\.ts\(2,/)
  assert.match(output, /bad_summarizer\.ts\(3,/)
})

test('built-in tools, tool outputs and images type-check, and misuse does not', () => {
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-src-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const good = path.join(dir, 'builtin.ts')
  const bad = path.join(dir, 'bad_builtin.ts')
  writeFileSync(good, [
    "import { Agent, type ImageContent, type Message, type ToolOutput } from 'zoo-keeper'",
    'export async function f(agent: Agent): Promise<void> {',
    "  agent.addBuiltinTools(['read_file', 'bash'], { workspace: '/tmp', bashDeny: ['sudo'],",
    "    confirm: async (tool, args) => tool !== 'bash' || args.command !== 'rm' })",
    "  agent.addBuiltinTools(['list_files'], { workspace: '/tmp' })",
    "  const r = await agent.chat('go')",
    '  const out = r.toolCalls[0].result as ToolOutput',
    '  console.log(out.text, out.details?.exit_code)',
    "  const images: ImageContent[] = agent.history().flatMap((m: Message) => m.images ?? [])",
    "  if (images[0]?.mimeType === 'image/png') console.log(images[0].data.length)",
    '}',
  ].join('\n'))
  writeFileSync(bad, [
    "import { Agent } from 'zoo-keeper'",
    "export function g(agent: Agent): void { agent.addBuiltinTools(['rm_rf'], { workspace: '/tmp' }) }",
    "export function h(agent: Agent): void { agent.addBuiltinTools(['bash'], { confirm: () => true }) }",
    "export function i(agent: Agent): void { agent.addBuiltinTools(['bash'], { workspace: '/tmp', confirm: () => 'yes' }) }",
  ].join('\n'))
  const { run } = typecheck([good, bad])
  const output = run.stdout + run.stderr
  assert.notEqual(run.status, 0)
  assert.doesNotMatch(output, /(^|[^_])builtin\.ts\(/m, output)
  assert.match(output, /bad_builtin\.ts\(2,/)
  assert.match(output, /bad_builtin\.ts\(3,/)
  assert.match(output, /bad_builtin\.ts\(4,/)
})

test('backends written in JavaScript type-check, and misuse does not', () => {
  const dir = mkdtempSync(path.join(CONSUMER, 'tsc-src-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const good = path.join(dir, 'backend.ts')
  const bad = path.join(dir, 'bad_backend.ts')
  writeFileSync(good, [
    "import { Agent, type Backend, type BackendItem, type BackendRequest } from 'zoo-keeper'",
    'const streaming: Backend = {',
    '  async *generate(request: BackendRequest): AsyncGenerator<BackendItem> {',
    '    const signal: AbortSignal = request.signal',
    "    const last: string = request.messages.at(-1)?.content ?? ''",
    '    const names: string[] = request.tools.map((t) => t.name)',
    '    if (signal.aborted || request.sampling.topP > 1 || request.maxTokens === 0) return',
    "    yield `${last} ${names.join()} ${request.toolChoice} ${request.thinking} ${request.stablePrefix} ${request.timeLeftMs ?? ''}`",
    "    yield { type: 'tool_call', name: 'get_weather', arguments: { city: 'Paris' } }",
    "    yield { type: 'thinking', text: 'short' }",
    "    yield { type: 'usage', promptTokens: 10, completionTokens: 2 }",
    "    yield { type: 'finish', reason: 'length' }",
    '  },',
    '  countTokens: (message) => message.content.length,',
    '}',
    'const emitting: Backend = {',
    '  async generate(request, emit) {',
    "    const taken: boolean = emit('Hello') && emit({ type: 'text', text: '!' })",
    "    if (!taken) emit({ type: 'error', message: `${request.maxCalls}` })",
    '  },',
    '}',
    "export const agents = [Agent.create({ backend: streaming, provider: { type: 'host', thinking: 'low' } }), Agent.create({ backend: emitting })]",
  ].join('\n'))
  writeFileSync(bad, [
    "import { Agent } from 'zoo-keeper'",
    'export const a = Agent.create({ backend: {} })',
    "export const b = Agent.create({ backend: { *generate() { yield 42 } } })",
    "export const c = Agent.create({ backend: { *generate() { yield { type: 'usage', promptTokens: '1', completionTokens: 2 } } } })",
    "export const d = Agent.create({ backend: { *generate() { yield 'x' } }, provider: { type: 'host', thinking: 'max' } })",
    "export const e = Agent.create({ backend: { *generate() { yield { type: 'finish', reason: 'done' } } } })",
  ].join('\n'))
  const { run } = typecheck([good, bad])
  const output = run.stdout + run.stderr
  assert.notEqual(run.status, 0)
  assert.doesNotMatch(output, /(^|[^_])backend\.ts\(/m, output)
  for (const line of [2, 3, 4, 5, 6]) assert.match(output, new RegExp(`bad_backend\\.ts\\(${line},`), output)
})
