'use strict'
// ZooError: every error the package raises, with the stable `.code` of
// zoo_core::ErrorCode (the same numbers as the C `zoo_status` and Python's `.code`).

/** Code numbers by name, as in zoo_core::ErrorCode. */
const ErrorCode = Object.freeze({
  INVALID_ARGUMENT: 1,
  INVALID_CONFIG: 2,
  INVALID_JSON: 3,
  MODEL_LOAD_FAILED: 4,
  INVALID_MESSAGE_SEQUENCE: 5,
  CONTEXT_OVERFLOW: 6,
  INFERENCE_FAILED: 7,
  CANCELLED: 8,
  TOOL_NOT_FOUND: 9,
  TOOL_VALIDATION_FAILED: 10,
  TOOL_RETRIES_EXHAUSTED: 11,
  TOOL_HANDLER_FAILED: 12,
  AGENT_NOT_RUNNING: 13,
  MCP: 14,
  IO: 15,
  INTERNAL: 16,
  PROVIDER_FAILED: 17,
  AUTHENTICATION_FAILED: 18,
})

const NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([name, code]) => [code, name.toLowerCase()]))

class ZooError extends Error {
  /**
   * @param {number} code one of ErrorCode
   * @param {string} message
   * @param {{cause?: unknown}} [options]
   */
  constructor(code, message, options) {
    super(message, options)
    this.name = 'ZooError'
    /** The stable error code. */
    this.code = code
    /** The code's name: `invalid_config`, `cancelled`, ... */
    this.codeName = NAMES[code] ?? 'unknown'
  }
}

const MARKER = /^\[zoo:(\d+)\] ([\s\S]*)$/

// Errors napi-rs raises itself when an argument has the wrong JS type.
const NAPI_ARGUMENT_STATUSES = new Set([
  'InvalidArg', 'ObjectExpected', 'StringExpected', 'NameExpected', 'FunctionExpected',
  'NumberExpected', 'BooleanExpected', 'ArrayExpected', 'BigintExpected',
])

/** The ZooError for an error thrown by the native module. */
function fromNative(error) {
  if (error instanceof ZooError) return error
  const message = error instanceof Error ? error.message : String(error)
  const marked = MARKER.exec(message)
  if (marked) return new ZooError(Number(marked[1]), marked[2])
  if (error && NAPI_ARGUMENT_STATUSES.has(error.code)) {
    return new ZooError(ErrorCode.INVALID_ARGUMENT, message, { cause: error })
  }
  return new ZooError(ErrorCode.INTERNAL, message, { cause: error })
}

/** Runs a native call, turning its errors into ZooErrors. */
function native(call) {
  try {
    return call()
  } catch (error) {
    throw fromNative(error)
  }
}

/** Awaits a native Promise, turning its rejection into a ZooError. */
async function nativeAsync(call) {
  try {
    return await call()
  } catch (error) {
    throw fromNative(error)
  }
}

/** `TypeName: message` for anything a tool may throw. */
function describe(thrown) {
  try {
    if (thrown instanceof Error) return thrown.message ? `${thrown.name}: ${thrown.message}` : thrown.name
    if (typeof thrown === 'string') return thrown
    return `a non-Error value was thrown: ${JSON.stringify(thrown) ?? String(thrown)}`
  } catch {
    return 'a value that cannot be printed was thrown'
  }
}

module.exports = { ZooError, ErrorCode, fromNative, native, nativeAsync, describe }
