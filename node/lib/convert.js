'use strict'
// Names at the edge: Node sees camelCase keys; the engine's JSON is
// snake_case. User data (tool arguments and results) is never renamed.

const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** Renames the keys of a flat object of numbers (usage, metrics). */
function camelKeys(object) {
  const out = {}
  for (const [key, value] of Object.entries(object ?? {})) out[camel(key)] = value
  return out
}

/**
 * A value as JSON text, like `JSON.stringify` except that numbers JSON
 * cannot hold are written as Python writes them (`NaN`, `Infinity`,
 * `-Infinity`) and BigInts as their digits: the engine reads those and
 * reports them against the key's rule, so that every value is checked
 * there, in the same words for Node, Python and C. Returns undefined for a
 * value JSON has no form for (a function, a symbol, undefined).
 */
function toJson(value) {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return `[${value.map((item) => toJson(item) ?? 'null').join(',')}]`
  if (value !== null && typeof value === 'object' && typeof value.toJSON !== 'function') {
    const entries = []
    for (const [key, item] of Object.entries(value)) {
      const json = toJson(item)
      if (json !== undefined) entries.push(`${JSON.stringify(key)}:${json}`)
    }
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * Settings (the agent's config, a model's load options) with camelCase
 * keys to the engine's JSON; anything but an object is passed as it is, for
 * the engine to refuse. Throws `[key, reason]` for a value JSON has no form
 * for; the engine checks everything else.
 */
function configToJson(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    const json = toJson(config)
    if (json === undefined) throw ['config', `expected a JSON object, got ${typeof config}`]
    return json
  }
  const out = {}
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue
    if (toJson(value) === undefined) throw [key, `expected a JSON value, got ${typeof value}`]
    out[snake(key)] =
      key === 'provider' || key === 'builtinTools'
        ? snakeKeys(value)
        : key === 'contextStrategy'
          ? strategyJson(value)
          : key === 'summarizer'
            ? summarizerJson(value)
            : value
  }
  return toJson(out)
}

/** `contextStrategy`: 'fifo', or `{compact: {...}}` with camelCase keys inside. */
function strategyJson(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const out = {}
  for (const [key, item] of Object.entries(value)) out[snake(key)] = snakeKeys(item)
  return out
}

/** `summarizer`: its keys to snake_case, and its `provider`'s too. */
function summarizerJson(value) {
  const out = snakeKeys(value)
  if (out !== null && typeof out === 'object' && !Array.isArray(out) && 'provider' in out) {
    out.provider = snakeKeys(out.provider)
  }
  return out
}

/**
 * A nested settings object (the `provider`) with its own keys in
 * snake_case; its values are the user's (mock replies, HTTP headers) and
 * stay as they are. Anything but a plain object is left for the engine to
 * refuse.
 */
function snakeKeys(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const out = {}
  for (const [key, item] of Object.entries(value)) out[snake(key)] = item
  return out
}

/**
 * Puts the camelCase key back into an engine message that names a
 * snake_case one, also inside a path (`provider.piece_delay_ms` is
 * `provider.pieceDelayMs`).
 */
function camelMessage(message) {
  return message.replace(KEY_IN_MESSAGE, (whole, key) => (key.includes('_') ? `\`${camel(key)}\`` : whole))
}

/** A backquoted key or key path (`builtin_tools.workspace`); those with an underscore are renamed. */
const KEY_IN_MESSAGE = /`((?:[a-z][a-z0-9_]*(?:\[\d+\])*\.)*[a-z][a-z0-9_]*(?:\[\d+\])*)`/g

/**
 * Keys whose values are the user's own data (a tool's arguments and result,
 * a call's update, a session's metadata): they cross as they are, in either
 * direction. Every other key of the engine's shapes is renamed.
 */
const USER_DATA = new Set(['arguments', 'result', 'update', 'metadata'])

/**
 * The engine's JSON as Node shows it: every key in camelCase, at every
 * depth, but inside the user's own data (USER_DATA); values as they are
 * (`stopReason: 'tool_limit'`). Generic, so a field the engine adds
 * reaches Node without a change here.
 */
function toNode(value) {
  if (Array.isArray(value)) return value.map(toNode)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [key, item] of Object.entries(value)) out[camel(key)] = USER_DATA.has(key) ? item : toNode(item)
  return out
}

/**
 * The reverse of toNode, for what Node hands the engine (messages): keys
 * in snake_case but inside the user's own data. Anything that is not an
 * object is left for the engine to refuse, with its own message.
 */
function fromNode(value) {
  if (Array.isArray(value)) return value.map(fromNode)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [key, item] of Object.entries(value)) {
    const name = snake(key)
    out[name] = USER_DATA.has(name) ? item : fromNode(item)
  }
  return out
}

/** A history message as Node shows it (`toolCalls`, `toolCallId`, `isError`, `images[].mimeType`). */
const toMessage = toNode

/** A message from Node, with an empty `content` when it has none. */
function fromMessage(m) {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return m
  return fromNode({ ...m, content: m.content ?? '' })
}

/** A response: `stopReason`, `toolCalls[].durationMs`, `usage.promptTokens`, ... */
const toResponse = toNode

/** An event: `agentId`, `chatId`, `seq`, `durationMs`, removed messages as history() shows them. */
const toEvent = toNode

/** A log record as Node sees it: `{level, target, message, fields}`, the fields' keys in camelCase. */
function toLogRecord(r) {
  return { level: r.level, target: r.target, message: r.message, fields: camelKeys(r.fields) }
}

/**
 * An MCP server's description (`{command, args, env, cwd, timeoutMs}` or
 * `{url, bearerToken, headers, timeoutMs}`) as the engine's JSON: its own
 * keys in snake_case (`env` and `headers` stay the user's). The engine
 * checks it, with the same messages in every language (camelCased back).
 * Returns undefined for a value JSON has no form for.
 */
function mcpTransportJson(transport) {
  return toJson(snakeKeys(transport))
}

/** An MCP server's description: `serverName`, `protocolVersion`, `stateReason`, ... */
const toMcpServerInfo = toNode

/** llama.cpp's CPU backend as Node shows it: the engine's JSON, camelCase. */
function toBackendInfo(info) {
  return { ...camelKeys(info), refused: info.refused.map((r) => camelKeys(r)) }
}

module.exports = {
  camelKeys, toJson, configToJson, toBackendInfo, camelMessage, toMessage, fromMessage, toResponse, toEvent, toLogRecord, mcpTransportJson, toMcpServerInfo,
}
