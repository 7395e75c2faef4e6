import js from '@eslint/js'
import globals from 'globals'

export default [
  { ignores: ['node_modules/', 'test-data/', 'reports/', 'docs/reports/'] },
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.node }
    },
    rules: {
      'func-names': ['error', 'always'],
      'no-unused-vars': ['error', { argsIgnorePattern: '^(next|req|res|encoding)$', caughtErrors: 'none' }]
    }
  },
  {
    files: ['test/**/*.js'],
    languageOptions: { globals: { ...globals.mocha } }
  },
  {
    files: ['dashboard/**/*.js'],
    languageOptions: { globals: { ...globals.browser } }
  }
]
