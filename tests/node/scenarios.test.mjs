// The Node runner of the shared scenario suite: every JSON file in
// tests/scenarios/ (format in its README) runs here against Agent on the
// mock, as it runs in the Rust, C and Python runners, and again on a
// backend written in JavaScript that replays the mock's script (README: On
// a host backend). Node speaks camelCase, so the scenario's snake_case
// keys are converted first.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ROOT, zk } from './helpers.mjs'

const { ZooError } = zk
const DIR = path.join(ROOT, 'tests', 'scenarios')
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort()

const CODES = {
  invalid_argument: 1, invalid_config: 2, invalid_json: 3, model_load_failed: 4,
  invalid_message_sequence: 5, context_overflow: 6, inference_failed: 7, cancelled: 8,
  tool_not_found: 9, tool_validation_failed: 10, tool_retries_exhausted: 11,
  tool_handler_failed: 12, agent_not_running: 13, mcp: 14, io: 15, internal: 16,
  provider_failed: 17, authentication_failed: 18,
}

const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())

/** The keys whose values are the tools' own data. */
const TOOL_DATA = new Set(['arguments', 'result', 'update'])

/** Keys to camelCase, except inside tool arguments, results and updates (the tools' own data). */
function camelize(value) {
  if (Array.isArray(value)) return value.map(camelize)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [key, item] of Object.entries(value)) {
    out[camel(key)] = TOOL_DATA.has(key) ? item : camelize(item)
  }
  return out
}

/** Subset matching as the README defines it; throws with the path of the first difference. */
function matches(want, got, at) {
  if (want !== null && typeof want === 'object' && !Array.isArray(want) && '$type' in want) {
    const kind = want.$type
    const ok = {
      number: typeof got === 'number',
      string: typeof got === 'string',
      boolean: typeof got === 'boolean',
      object: got !== null && typeof got === 'object' && !Array.isArray(got),
      array: Array.isArray(got),
      any: true,
    }[kind]
    assert.ok(ok, `${at}: want a ${kind}, got ${JSON.stringify(got)}`)
    return
  }
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${at}: want an array, got ${JSON.stringify(got)}`)
    assert.equal(got.length, want.length, `${at}: want ${want.length} items, got ${got.length}: ${JSON.stringify(got)}`)
    want.forEach((item, i) => matches(item, got[i], `${at}.${i}`))
    return
  }
  if (want !== null && typeof want === 'object') {
    assert.ok(got !== null && typeof got === 'object', `${at}: want an object, got ${JSON.stringify(got)}`)
    for (const [key, item] of Object.entries(want)) {
      assert.ok(key in got, `${at}.${key}: missing (got ${JSON.stringify(got)})`)
      matches(item, got[key], `${at}.${key}`)
    }
    return
  }
  assert.equal(got, want, `${at}: want ${JSON.stringify(want)}, got ${JSON.stringify(got)}`)
}

function checkError(want, error, at) {
  assert.ok(want, `${at}: unexpected error ${error?.stack ?? error}`)
  assert.ok(error instanceof ZooError, `${at}: ${error} is not a ZooError`)
  assert.equal(error.code, CODES[want.code], `${at}: want ${want.code}, got ${error.codeName}: ${error.message}`)
  assert.equal(error.codeName, want.code, `${at}: codeName`)
  if ('message' in want) {
    // Node names config keys in camelCase, as it takes them.
    // Also every part of a key path: `tool_execution.batched` is
    // `toolExecution.batched`, `provider.piece_delay_ms` `provider.pieceDelayMs`.
    const message = want.code === 'invalid_config'
      ? want.message.replace(
        /`((?:[a-z][a-z0-9_]*(?:\[\d+\])*\.)*[a-z][a-z0-9_]*(?:\[\d+\])*)`/g,
        (whole, key) => (key.includes('_') ? `\`${camel(key)}\`` : whole),
      )
      : want.message
    assert.equal(error.message, message, `${at}.message`)
  }
}

/** How long `wait_cancelled` and `cancel_seen` wait at most (ms). */
const SCENARIO_WAIT_MS = 60_000

/** The tools that saw their call's cancel token set (`cancel_seen`), each a Promise resolved then. */
class Seen {
  #signals = new Map()

  #entry(name) {
    if (!this.#signals.has(name)) {
      let resolve
      const promise = new Promise((r) => { resolve = r })
      this.#signals.set(name, { promise, resolve })
    }
    return this.#signals.get(name)
  }

  add(name) {
    this.#entry(name).resolve(true)
  }

  /** Whether `name` saw its token set, waiting for it a while. */
  async waitFor(name) {
    const timer = new AbortController()
    const late = sleep(SCENARIO_WAIT_MS, false, { signal: timer.signal }).catch(() => false)
    const seen = await Promise.race([this.#entry(name).promise, late])
    timer.abort()
    return seen
  }
}

/** Resolves true when `signal` aborts, false after `ms`. */
function aborted(signal, ms) {
  if (signal.aborted) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      resolve(true)
    }, { once: true })
  })
}

function handler(agent, name, behavior, seen) {
  return async (args, ctx) => {
    if (behavior.stop) agent.stop()
    if (behavior.steer !== undefined) agent.steer(behavior.steer)
    if (behavior.follow_up !== undefined) agent.followUp(behavior.follow_up)
    for (const report of behavior.report ?? []) {
      if ('progress' in report) ctx.progress(report.progress)
      else ctx.update(report.update)
    }
    if (behavior.sleep_ms !== undefined) await sleep(behavior.sleep_ms)
    if (behavior.wait_cancelled) {
      if (!(await aborted(ctx.signal, SCENARIO_WAIT_MS))) throw 'the cancel token was never set'
      seen.add(name)
      ctx.progress('cancelled')
      return { cancelled: true }
    }
    if (behavior.cancel_seen !== undefined) return seen.waitFor(behavior.cancel_seen)
    // A thrown string reaches the engine as it is.
    if (behavior.fail !== undefined) throw behavior.fail
    if (behavior.echo) return args
    return behavior.return ?? null
  }
}

/**
 * The hooks a scenario scripts (README: Hooks), as `setHooks` takes them;
 * `errors` receives what onError is given. `rules` stay snake_case: they
 * are the scenario's own data.
 */
function scriptedHooks(rules, errors) {
  const first = (point, match) => (rules[point] ?? []).find(match)
  const thrown = (rule) => {
    // A thrown string reaches the engine as it is.
    if (rule.throw !== undefined) throw rule.throw
  }
  const forTool = (call) => (r) => r.tool === undefined || r.tool === call.name
  const all = {
    inputFilter: (message) => {
      const rule = first('input_filter', (r) => r.contains === undefined || message.includes(r.contains))
      if (!rule) return undefined
      thrown(rule)
      return rule.reject !== undefined ? { action: 'reject', reason: rule.reject } : { action: 'warn', warning: rule.warn }
    },
    beforeTurn: (turn) => {
      const rule = first('before_turn', (r) => r.turn === undefined || r.turn === turn)
      if (!rule) return undefined
      thrown(rule)
      return { action: 'end' }
    },
    afterTurn: (turn) => {
      const rule = first('after_turn', (r) => r.turn === undefined || r.turn === turn)
      if (rule) thrown(rule)
      return undefined
    },
    beforeToolCall: (call) => {
      const rule = first('before_tool_call', forTool(call))
      if (!rule) return undefined
      thrown(rule)
      return rule.rewrite !== undefined ? { action: 'rewrite', arguments: rule.rewrite } : { action: 'deny', reason: rule.deny }
    },
    afterToolCall: (call) => {
      const rule = first('after_tool_call', forTool(call))
      if (!rule) return undefined
      thrown(rule)
      return { result: rule.replace }
    },
    transformContext: (messages) => {
      const rule = first('transform_context', () => true)
      if (!rule) return undefined
      thrown(rule)
      return messages.filter((m) => !(m.content ?? '').includes(rule.drop_containing))
    },
    contextStrategy: (request) => {
      const rule = first('context_strategy', () => true)
      if (!rule) return undefined
      thrown(rule)
      if (rule.decline) return undefined
      if (rule.keep_all) return request.messages
      const start = Math.max(request.currentTurn - (rule.keep_last ?? 0), 0)
      const summary = rule.summary !== undefined ? [{ role: 'assistant', content: rule.summary }] : []
      return [...summary, ...request.messages.slice(start)]
    },
    onError: (error) => errors.push(error.message),
  }
  const hooks = {}
  for (const [name, fn] of Object.entries(all)) {
    const point = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    if (rules[point] !== undefined && rules[point] !== false) hooks[name] = fn
  }
  return hooks
}

const eventPattern = (want) => (typeof want === 'string' ? { type: want } : want)

async function runChat(agent, step, at, hookErrors) {
  const expect = step.expect ?? {}
  const events = []
  let response
  let error
  hookErrors.length = 0
  try {
    const { hooks, ...rest } = step.options ?? {}
    const options = { ...camelize(rest), onEvent: (e) => events.push(e) }
    if (hooks !== undefined) options.hooks = scriptedHooks(hooks, hookErrors)
    if ('chat' in step) response = await agent.chat(step.chat, options)
    else if ('regenerate' in step) response = await agent.regenerate(options)
    else response = await agent.continueChat(options)
  } catch (e) {
    error = e
  }
  if (error) checkError(expect.error, error, at)
  else {
    assert.ok(!expect.error, `${at}: want an error, got ${JSON.stringify(response)}`)
    if (expect.response) matches(camelize(expect.response), response, `${at}.response`)
  }
  if (expect.events) matches(camelize(expect.events.map(eventPattern)), events, `${at}.events`)
  if (expect.hook_errors) matches(expect.hook_errors, hookErrors, `${at}.hookErrors`)
}

const words = (text) => text.split(/\s+/).filter(Boolean).length

/** Words with the whitespace before each, as the mock streams them. */
const pieces = (text) => text.match(/\s*\S+|\s+$/g) ?? []

/**
 * The mock's rule: a token per word (an image is the 12 words of its
 * placeholder), 2 per call plus the words of its arguments' JSON, and 4
 * for the message's markup.
 */
function mockTokens(message) {
  const calls = (message.toolCalls ?? []).reduce((n, c) => n + 2 + words(JSON.stringify(c.arguments)), 0)
  return words(message.content) + 12 * (message.images?.length ?? 0) + calls + 4
}

const sum = (messages) => messages.reduce((n, m) => n + mockTokens(m), 0)

/**
 * The mock's script replayed by a backend written in JavaScript, as a
 * user's test double would: each reply streamed word by word (after
 * piece_delay_ms), cut at maxTokens, then `echo: <message>`; usage and
 * token counts by the mock's rule, so that the scenarios' figures hold.
 */
function replay(mock) {
  const replies = [...(mock.replies ?? [])]
  const delay = mock.piece_delay_ms ?? 0
  return {
    async *generate(request) {
      const users = request.messages.filter((m) => m.role === 'user')
      let text = replies.length ? replies.shift() : `echo: ${users.at(-1)?.content ?? ''}`
      // A reasoning model behind a host gives its reasoning apart.
      const end = text.indexOf('</think>')
      if (text.startsWith('<think>') && end >= 0) {
        yield { type: 'thinking', text: text.slice('<think>'.length, end) }
        text = text.slice(end + '</think>'.length).trimStart()
      }
      const every = pieces(text)
      const sent = request.maxTokens === null ? every : every.slice(0, request.maxTokens)
      let kept = sent.join('')
      const cuts = request.stop.map((stop) => kept.indexOf(stop)).filter((at) => at >= 0)
      if (cuts.length) kept = kept.slice(0, Math.min(...cuts))
      // Before the text: a stop string ends the reply where it is seen.
      yield {
        type: 'usage',
        promptTokens: sum(request.messages),
        cachedTokens: sum(request.messages.slice(0, request.stablePrefix)),
        completionTokens: pieces(kept).length,
      }
      for (const piece of sent) {
        if (await aborted(request.signal, delay)) return
        yield piece
      }
      if (sent.length < every.length) yield { type: 'finish', reason: 'length' }
    },
    countTokens: mockTokens,
  }
}

/** Why a scenario cannot run on a host backend (README: On a host backend), or null. */
function hostBlocker(scenario) {
  if (scenario.config?.provider !== undefined) return 'it checks the provider config itself'
  if ((scenario.mock?.replies ?? []).some((r) => typeof r === 'object')) {
    return "a scripted failure is inference_failed; a host's is provider_failed"
  }
  return null
}

/**
 * The scenario's config in camelCase: unless it names a provider, the
 * scenario's mock is added as `provider: {type: 'mock', ...}`; on a host
 * backend, the backend replaying it as `backend`.
 */
function scenarioConfig(scenario, host) {
  const config = camelize(scenario.config ?? {})
  if (host) return { ...config, backend: replay(scenario.mock ?? {}) }
  if (config.provider !== undefined) return config
  const mock = scenario.mock ?? {}
  return { ...config, provider: { type: 'mock', replies: mock.replies ?? [], pieceDelayMs: mock.piece_delay_ms ?? 0 } }
}

/** A fresh folder with the scenario's `files` (text, or `{bytes: [...]}`) and `symlinks`. */
function makeWorkspace(spec) {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'zoo-node-scenario-')))
  for (const [name, content] of Object.entries(spec.files ?? {})) {
    const file = path.join(dir, name)
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, typeof content === 'string' ? content : Buffer.from(content.bytes))
  }
  for (const [name, target] of Object.entries(spec.symlinks ?? {})) symlinkSync(target, path.join(dir, name))
  return dir
}

/** `confirm` of `builtin_tools`: per tool 'allow', 'refuse' or {fail: message} (thrown as it is). */
function scriptedConfirm(script) {
  return (tool) => {
    const answer = script[tool] ?? 'allow'
    if (typeof answer === 'object') throw answer.fail
    return answer === 'allow'
  }
}

function expectFiles(want, workspace, at) {
  assert.ok(workspace, `${at}: expect_files needs a workspace`)
  for (const [name, content] of Object.entries(want)) {
    const file = path.join(workspace, name)
    const got = existsSync(file) ? readFileSync(file, 'utf8') : null
    matches(content, got, `${at}.files.${name}`)
  }
}

async function runScenario(scenario, workspace, host) {
  let agent
  const hookErrors = []
  try {
    const config = scenarioConfig(scenario, host)
    if (scenario.hooks !== undefined) config.hooks = scriptedHooks(scenario.hooks, hookErrors)
    agent = await zk.Agent.create(config)
  } catch (error) {
    checkError(scenario.create_error, error, 'create')
    return
  }
  try {
    assert.ok(!scenario.create_error, `create: want the error ${JSON.stringify(scenario.create_error)}, got an agent`)
    const seen = new Seen()
    for (const tool of scenario.tools ?? []) {
      let error
      try {
        agent.registerTool(
          {
            name: tool.name,
            description: tool.description ?? '',
            parameters: tool.parameters ?? { type: 'object' },
            exclusive: tool.exclusive,
            timeoutMs: tool.timeout_ms,
          },
          handler(agent, tool.name, tool.behavior, seen),
        )
      } catch (e) {
        error = e
      }
      if (error) checkError(tool.register_error, error, `tool ${tool.name}`)
      else assert.ok(!tool.register_error, `tool ${tool.name}: want the error ${JSON.stringify(tool.register_error)}, got none`)
    }
    const builtin = scenario.builtin_tools
    if (builtin) {
      agent.addBuiltinTools(builtin.tools, {
        workspace,
        confirm: builtin.confirm ? scriptedConfirm(builtin.confirm) : undefined,
        bashDeny: builtin.bash_deny,
      })
    }
    for (const sub of scenario.subagents ?? []) {
      agent.addSubagent({ name: sub.name, description: sub.description, tools: sub.tools, config: camelize(sub.config ?? {}) })
    }
    for (const [i, step] of (scenario.steps ?? []).entries()) {
      const at = `steps.${i}`
      if ('chat' in step || 'continue_chat' in step || 'regenerate' in step) await runChat(agent, step, at, hookErrors)
      else if ('set_history' in step) {
        const want = step.expect?.error
        let error
        try {
          await agent.setHistory(camelize(step.set_history))
        } catch (e) {
          error = e
        }
        if (error) checkError(want, error, at)
        else assert.ok(!want, `${at}: want an error, got none`)
      } else if ('unregister_tool' in step) {
        const removed = agent.unregisterTool(step.unregister_tool)
        if (step.expect && 'removed' in step.expect) matches(step.expect.removed, removed, `${at}.removed`)
      } else if ('set_system_prompt' in step) await agent.setSystemPrompt(step.set_system_prompt)
      else if ('clear_history' in step) await agent.clearHistory()
      else if ('steer' in step) agent.steer(step.steer)
      else if ('follow_up' in step) agent.followUp(step.follow_up)
      else if ('clear_queues' in step) agent.clearQueues()
      else if ('expect_history' in step) matches(camelize(step.expect_history), agent.history(), `${at}.history`)
      else if ('activate_skill' in step) {
        const expect = step.expect ?? {}
        let body
        let error
        try {
          body = agent.activateSkill(step.activate_skill)
        } catch (e) {
          error = e
        }
        if (error) checkError(expect.error, error, at)
        else {
          assert.ok(!expect.error, `${at}: want an error, got none`)
          if ('result' in expect) matches(expect.result, body, `${at}.result`)
        }
      } else if ('deactivate_skill' in step) agent.deactivateSkill()
      else if ('expect_tools' in step) matches(step.expect_tools, agent.tools().map((t) => t.name), `${at}.tools`)
      else if ('expect_files' in step) expectFiles(step.expect_files, workspace, at)
      else assert.fail(`${at}: unknown step ${JSON.stringify(step)}`)
    }
  } finally {
    await agent.close()
  }
}

test('the suite is there', () => {
  assert.ok(FILES.length >= 25, `only ${FILES.length} scenarios`)
})

/** Runs one scenario file, on the mock or (host) on the replaying backend. */
async function runFile(file, text, scenario, host) {
  assert.equal(scenario.name, path.basename(file, '.json'))
  if (!scenario.workspace) return runScenario(scenario, undefined, host)
  const workspace = makeWorkspace(scenario.workspace)
  try {
    // A scenario with a workspace reads with `$WORKSPACE` as its path.
    await runScenario(JSON.parse(text.replaceAll('$WORKSPACE', workspace)), workspace, host)
  } finally {
    rmSync(workspace, { recursive: true, force: true })
  }
}

let onAHost = 0
for (const file of FILES) {
  const text = readFileSync(path.join(DIR, file), 'utf8')
  const scenario = JSON.parse(text)
  test(scenario.name, () => runFile(file, text, scenario, false))
  // The others are listed, with the reason, in the README (On a host backend).
  if (hostBlocker(scenario) !== null) continue
  onAHost += 1
  test(`${scenario.name} on a host backend`, () => runFile(file, text, scenario, true))
}

test('most scenarios run on a host backend', () => {
  assert.ok(onAHost >= FILES.length - 15, `only ${onAHost} of ${FILES.length}`)
})
