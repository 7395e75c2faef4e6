import js from '@eslint/js'
import globals from 'globals'

export default [
  { ignores: ['node_modules/', 'test-data/', 'reports/', '.scratch/'] },
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
    // mocha's describe/it bodies read better unnamed; the spec string names them
    files: ['test/**/*.js'],
    languageOptions: { globals: { ...globals.mocha } },
    rules: { 'func-names': 'off' }
  },
  {
    files: ['dashboard/**/*.js'],
    languageOptions: { globals: { ...globals.browser } }
  }
]
