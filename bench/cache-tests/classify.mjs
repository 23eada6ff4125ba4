// Classifies raw results of the HTTP caching test suite with the suite's own rules.
//
//   node classify.mjs SUITE_DIR RESULTS.json
//
// SUITE_DIR is a checkout of github.com/http-tests/cache-tests; RESULTS.json what its CLI client
// (test-engine/cli.mjs) printed. Prints a JSON array with one object per test of the suite:
// group (the suite's group id), id, name, kind (required, optimal or check), depends_on,
// cdn_only, browser_only, browser_skip, result (the name of the suite's result type, from
// test-engine/lib/results.mjs: pass, fail, optional_fail, yes, no, setup_fail, harness_fail,
// dependency_fail, retry or untested; dependencies honoured), result_alone (the same with
// dependencies not honoured, as the suite's client rates a single test run on its own) and
// message (the failure's text).
import path from 'node:path'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'

const [suiteDir, resultsFile] = process.argv.slice(2)
if (!suiteDir || !resultsFile) {
  console.error('usage: node classify.mjs SUITE_DIR RESULTS.json')
  process.exit(2)
}
const load = file => import(pathToFileURL(path.resolve(suiteDir, file)).href)
const { default: suites } = await load('tests/index.mjs')
const { determineTestResult, resultTypes } = await load('test-engine/lib/results.mjs')
const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'))

const out = []
for (const suite of suites) {
  for (const test of suite.tests) {
    const type = determineTestResult(suites, test.id, results, true)
    const alone = determineTestResult(suites, test.id, results, false)
    const nameOf = t => Object.keys(resultTypes).find(key => resultTypes[key] === t) || 'unknown'
    const raw = results[test.id]
    out.push({
      group: suite.id,
      id: test.id,
      name: test.name,
      kind: test.kind || 'required',
      depends_on: test.depends_on || [],
      cdn_only: test.cdn_only === true,
      browser_only: test.browser_only === true,
      browser_skip: test.browser_skip === true,
      result: nameOf(type),
      result_alone: nameOf(alone),
      message: Array.isArray(raw) ? raw.join(': ') : ''
    })
  }
}
console.log(JSON.stringify(out, null, 1))
