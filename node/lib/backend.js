'use strict'
// Backends written in JavaScript: `Agent.create({backend})` with an object
// whose `generate(request, emit)` streams the reply, either by returning an
// (async) iterable of items or by calling `emit(item)` and resolving when
// done. The engine calls it through the wrappers made here, which never
// reject (see bindings/node/src/backend.rs).

const { describe, native } = require('./errors.js')
const { toMessage } = require('./convert.js')

const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

const OK = JSON.stringify({ ok: true, value: null })

/** What a race against the abort yields when the abort wins. */
const ABORTED = Symbol('aborted')

/** The request as a backend sees it: camelCase, messages as `agent.history()` gives them, and an AbortSignal. */
function toRequest(json, signal) {
  const r = JSON.parse(json)
  const s = r.sampling
  return {
    messages: r.messages.map(toMessage),
    tools: r.tools,
    toolChoice: r.tool_choice,
    maxTokens: r.max_tokens,
    maxCalls: r.max_calls,
    stop: r.stop,
    sampling: {
      temperature: s.temperature,
      topP: s.top_p,
      topK: s.top_k,
      minP: s.min_p,
      repeatPenalty: s.repeat_penalty,
      seed: s.seed,
    },
    thinking: r.thinking,
    stablePrefix: r.stable_prefix,
    timeLeftMs: r.time_left_ms,
    signal,
  }
}

/** Hands one item to the engine; whether it was taken. Throws for what is not an item. */
function put(sink, item) {
  if (typeof item === 'string') return sink.text(item)
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    throw new TypeError(`a backend emits strings and item objects, got ${item === null ? 'null' : Array.isArray(item) ? 'an array' : typeof item}`)
  }
  // The item's own keys in snake_case; its values (a call's arguments) are the model's.
  const out = {}
  for (const [key, value] of Object.entries(item)) out[snake(key)] = value
  const json = JSON.stringify(out)
  if (json === undefined) throw new TypeError('a backend item must be something JSON can hold')
  return native(() => sink.emitJson(json))
}

/** The iterator of what `generate` returned, or null when it is a Promise (or nothing). */
function iteratorOf(result) {
  if (result === null || result === undefined || typeof result === 'string') return null
  if (typeof result[Symbol.asyncIterator] === 'function') return result[Symbol.asyncIterator]()
  if (typeof result[Symbol.iterator] === 'function') return result[Symbol.iterator]()
  return null
}

/** Takes items until the iterator ends, the reply ends, or the signal aborts; then closes the iterator. */
async function drain(iterator, emit, signal) {
  const aborted = new Promise((resolve) => {
    if (signal.aborted) resolve(ABORTED)
    else signal.addEventListener('abort', () => resolve(ABORTED), { once: true })
  })
  try {
    for (;;) {
      const next = Promise.resolve(iterator.next())
      next.catch(() => {}) // a rejection after the abort is nobody's
      const step = await Promise.race([next, aborted])
      if (step === ABORTED || step.done || !emit(step.value)) return
    }
  } finally {
    // Runs the generator's `finally` blocks; one still awaiting is not waited for.
    if (typeof iterator.return === 'function') {
      Promise.resolve()
        .then(() => iterator.return())
        .catch(() => {})
    }
  }
}

/** `backend.generate` wrapped for the native module: a Promise of the envelope, never a rejection. */
function wrapGenerate(backend) {
  return async (requestJson, sink) => {
    const controller = new AbortController()
    try {
      native(() => sink.onCancel(() => controller.abort()))
      const emit = (item) => put(sink, item)
      const result = backend.generate(toRequest(requestJson, controller.signal), emit)
      const iterator = iteratorOf(result)
      if (iterator === null) await result
      else await drain(iterator, emit, controller.signal)
      return OK
    } catch (thrown) {
      return JSON.stringify({ ok: false, error: describe(thrown) })
    }
  }
}

/** `backend.countTokens` wrapped like a tool: the envelope of a number. */
function wrapCountTokens(backend) {
  return async (messageJson) => {
    try {
      return JSON.stringify({ ok: true, value: await backend.countTokens(toMessage(JSON.parse(messageJson))) })
    } catch (thrown) {
      return JSON.stringify({ ok: false, error: describe(thrown) })
    }
  }
}

/** The native `generate` and `countTokens` (or null) of a user's backend; throws a TypeError-worded message for a bad one. */
function backendFunctions(backend) {
  const kind = backend === null ? 'null' : typeof backend === 'object' ? backend.constructor?.name ?? 'object' : typeof backend
  if (backend === null || typeof backend !== 'object' || typeof backend.generate !== 'function') {
    return { error: `invalid argument: a backend needs a generate(request) method, and ${kind} has none` }
  }
  return {
    generate: wrapGenerate(backend),
    countTokens: typeof backend.countTokens === 'function' ? wrapCountTokens(backend) : null,
  }
}

module.exports = { backendFunctions }
