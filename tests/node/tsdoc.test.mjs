// Every exported declaration of the package's types (the `types` file of
// its package.json, lib/zoo-keeper.d.ts), and every member of an exported
// class or interface, has a TSDoc comment: the declarations are the Node
// reference (editors show the comments on hover), so an undocumented item
// is a hole in it. Read with the TypeScript compiler API of the consumer's
// typescript, without compiling anything (nor loading the native module,
// which helpers.mjs does).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const CONSUMER = path.resolve(process.env.ZOO_NODE_CONSUMER ?? path.join(ROOT, 'target', 'node-consumer'))
const ts = createRequire(path.join(CONSUMER, 'package.json'))('typescript')

/** Whether `node` has a doc comment with some text (or a tag). */
function documented(node) {
  return ts.getJSDocCommentsAndTags(node).some((doc) => {
    const text = typeof doc.comment === 'string' ? doc.comment : (doc.comment ?? []).map((part) => part.text).join('')
    return text.trim() !== '' || (doc.tags ?? []).length > 0
  })
}

/** The name a diagnostic gives a declaration or member. */
function nameOf(node, sourceFile) {
  if (ts.isVariableStatement(node)) return node.declarationList.declarations.map((d) => d.name.getText(sourceFile)).join(', ')
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  if (ts.isIndexSignatureDeclaration(node)) return '[index]'
  if (ts.isCallSignatureDeclaration(node)) return '(call)'
  return node.name?.getText(sourceFile) ?? ts.SyntaxKind[node.kind]
}

function isPrivate(member) {
  return (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Private) !== 0 || (member.name && ts.isPrivateIdentifier(member.name))
}

/**
 * The exported declarations of a .d.ts and their members that have no doc
 * comment, as `Name` and `Name.member`. Members are those of classes,
 * interfaces, enums, and of a type alias that is one object type
 * (`type JsonSchema = {...}`); private members (a `private constructor()`
 * that keeps `new` away) are not API.
 */
export function undocumented(fileName, text) {
  const sourceFile = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true)
  const missing = []
  for (const statement of sourceFile.statements) {
    const exported = (ts.getCombinedModifierFlags(statement) & ts.ModifierFlags.Export) !== 0
    if (!exported || ts.isExportDeclaration(statement) || ts.isExportAssignment(statement)) continue
    const name = nameOf(statement, sourceFile)
    if (!documented(statement)) missing.push(name)
    let members = []
    if (ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) || ts.isEnumDeclaration(statement)) {
      members = statement.members
    } else if (ts.isTypeAliasDeclaration(statement) && ts.isTypeLiteralNode(statement.type)) {
      members = statement.type.members
    }
    for (const member of members) {
      if (isPrivate(member) || ts.isIndexSignatureDeclaration(member)) continue
      if (!documented(member)) missing.push(`${name}.${nameOf(member, sourceFile)}`)
    }
  }
  return missing
}

test('every exported declaration and member of the package types has a TSDoc comment', () => {
  const pkgDir = path.join(CONSUMER, 'node_modules', 'zoo-keeper')
  const types = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).types
  assert.ok(types, 'package.json names no `types` file')
  const file = path.join(pkgDir, types)
  const text = readFileSync(file, 'utf8')
  const missing = undocumented(file, text)
  assert.deepEqual(missing, [], `undocumented in ${types}: ${missing.join(', ')}`)
  // Not vacuous: the file holds the API the check walked.
  for (const name of ['class Agent', 'interface AgentConfig', 'type AgentEvent', 'function setLogger']) {
    assert.match(text, new RegExp(`export declare ${name}\\b|export ${name}\\b`))
  }
})

test('the check finds a declaration or a member without a comment, and only those', () => {
  const missing = undocumented('probe.d.ts', [
    '/** Documented. */',
    'export interface A {',
    '  /** Documented. */',
    '  a: number',
    '  b: string',
    '}',
    'export type B = string',
    '/** Documented. */',
    'export declare class C {',
    '  private constructor()',
    '  /** Documented. */',
    '  m(): void',
    '  readonly n: number',
    '}',
    '/** Documented. */',
    'export type D = {',
    '  /** Documented. */',
    '  x: number',
    '  y: number',
    '}',
    '/**  */',
    'export declare function e(): void',
    '/** Documented. */',
    'export declare const f: number',
    'interface NotExported { g: number }',
  ].join('\n'))
  assert.deepEqual(missing, ['A.b', 'B', 'C.n', 'D.y', 'e'])
})
