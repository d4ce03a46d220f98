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
    out[snake(key)] = key === 'provider' || key === 'builtinTools' ? snakeKeys(value) : key === 'contextStrategy' ? strategyJson(value) : value
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

function toolCall(call) {
  return { id: call.id, name: call.name, arguments: call.arguments }
}

function toMessage(m) {
  const out = { role: m.role, content: m.content }
  if (m.tool_calls?.length) out.toolCalls = m.tool_calls.map(toolCall)
  if (m.tool_call_id != null) out.toolCallId = m.tool_call_id
  if (m.name != null) out.name = m.name
  if (m.is_error) out.isError = true
  if (m.images?.length) out.images = m.images.map((i) => ({ mimeType: i.mime_type, data: i.data }))
  if (m.thinking != null) out.thinking = m.thinking
  return out
}

function fromMessage(m) {
  if (m === null || typeof m !== 'object') return m
  const out = { role: m.role, content: m.content ?? '' }
  if (m.toolCalls !== undefined) out.tool_calls = m.toolCalls
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId
  if (m.name !== undefined) out.name = m.name
  if (m.isError !== undefined) out.is_error = m.isError
  if (Array.isArray(m.images)) {
    out.images = m.images.map((i) => (i !== null && typeof i === 'object' ? { mime_type: i.mimeType, data: i.data } : i))
  } else if (m.images !== undefined) out.images = m.images
  if (m.thinking !== undefined) out.thinking = m.thinking
  return out
}

function toolCallRecord(r) {
  const out = { id: r.id, name: r.name, arguments: r.arguments, durationMs: r.duration_ms }
  if ('result' in r) out.result = r.result
  if ('error' in r) out.error = r.error
  return out
}

function toolErrorRecord(r) {
  return { tool: r.tool, kind: r.kind, message: r.message, attempt: r.attempt }
}

function toResponse(r) {
  const out = {
    text: r.text,
    stopReason: r.stop_reason,
    toolCalls: r.tool_calls.map(toolCallRecord),
    toolErrors: r.tool_errors.map(toolErrorRecord),
    usage: camelKeys(r.usage),
    metrics: camelKeys(r.metrics),
  }
  if (r.thinking != null) out.thinking = r.thinking
  return out
}

/**
 * An event as Node shows it: the engine's JSON with camelCase keys
 * (`agentId`, `chatId`, `seq`, `durationMs`, `stopReason`), values as they
 * are (`type: 'turn_started'`), a tool's own `arguments` and `result`
 * untouched, and removed messages in the shape `history()` returns.
 */
function toEvent(e) {
  const out = {}
  for (const [key, value] of Object.entries(e)) {
    if (key === 'arguments' || key === 'result') out[key] = value
    else if (key === 'removed') out.removed = value.map(toMessage)
    else if (key === 'usage') out.usage = camelKeys(value)
    else out[camel(key)] = value
  }
  return out
}

/** A log record as Node sees it: `{level, target, message, fields}`, the fields' keys in camelCase. */
function toLogRecord(r) {
  return { level: r.level, target: r.target, message: r.message, fields: camelKeys(r.fields) }
}

// An MCP server description's keys: the engine's name for each and what
// its value must be. `command` means stdio, `url` Streamable HTTP.
const MCP_KEYS = {
  command: ['command', 'string'],
  args: ['args', 'strings'],
  env: ['env', 'record'],
  cwd: ['cwd', 'string'],
  url: ['url', 'string'],
  bearerToken: ['bearer_token', 'string'],
  headers: ['headers', 'record'],
  timeoutMs: ['timeout_ms', 'milliseconds'],
  maxMessageBytes: ['max_message_bytes', 'bytes'],
}
const MCP_STDIO_KEYS = ['command', 'args', 'env', 'cwd', 'timeoutMs', 'maxMessageBytes']
const MCP_HTTP_KEYS = ['url', 'bearerToken', 'headers', 'timeoutMs', 'maxMessageBytes']

/** Why `value` is not of `kind` (null when it is). */
function mcpValueProblem(key, kind, value) {
  switch (kind) {
    case 'string':
      return typeof value === 'string' ? null : `\`${key}\` must be a string`
    case 'strings':
      return Array.isArray(value) && value.every((a) => typeof a === 'string') ? null : `\`${key}\` must be an array of strings`
    case 'record': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return `\`${key}\` must be an object of strings`
      const bad = Object.entries(value).find(([, entry]) => typeof entry !== 'string')
      return bad ? `\`${key}.${bad[0]}\` must be a string, got ${typeof bad[1]}` : null
    }
    case 'bytes':
      return Number.isSafeInteger(value) && value >= 1 ? null : `\`${key}\` must be a positive integer (bytes), got ${value}`
    default:
      return Number.isSafeInteger(value) && value >= 1 ? null : `\`${key}\` must be a positive integer (milliseconds), got ${value}`
  }
}

/**
 * An MCP server's description (`{command, args, env, cwd, timeoutMs}` or
 * `{url, bearerToken, headers, timeoutMs}`) to the engine's JSON form;
 * returns the JSON or throws the reason it is wrong (a string).
 */
function mcpTransportJson(transport) {
  if (transport === null || typeof transport !== 'object' || Array.isArray(transport)) {
    throw 'the transport must be an object: {command, args?, env?, cwd?} or {url, bearerToken?, headers?}'
  }
  const given = Object.keys(transport).filter((key) => transport[key] !== undefined)
  const stdio = given.includes('command')
  if (stdio === given.includes('url')) throw 'the transport needs exactly one of `command` (stdio) or `url` (Streamable HTTP)'
  const allowed = stdio ? MCP_STDIO_KEYS : MCP_HTTP_KEYS
  const out = { type: stdio ? 'stdio' : 'http' }
  for (const key of given) {
    if (!allowed.includes(key)) {
      throw `unknown key \`${key}\` for ${stdio ? 'a stdio' : 'an HTTP'} server (expected ${allowed.map((k) => `\`${k}\``).join(', ')})`
    }
    const [engineKey, kind] = MCP_KEYS[key]
    const problem = mcpValueProblem(key, kind, transport[key])
    if (problem) throw problem
    out[engineKey] = transport[key]
  }
  return JSON.stringify(out)
}

function toMcpServerInfo(info) {
  return {
    name: info.name,
    serverName: info.server_name,
    serverVersion: info.server_version,
    protocolVersion: info.protocol_version,
    tools: info.tools,
    skipped: info.skipped,
    state: info.state,
    stateReason: info.state_reason,
  }
}

module.exports = {
  toJson, configToJson, camelMessage, toMessage, fromMessage, toResponse, toEvent, toLogRecord, mcpTransportJson, toMcpServerInfo,
}
