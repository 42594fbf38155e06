// ESLint for the extension's TypeScript (flat config): the recommended JavaScript and
// typescript-eslint rules; formatting is prettier's (.prettierrc.json), so eslint's
// formatting rules are off.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // Built output, and the files generated from jaxviz/schema/messages.json.
  { ignores: ['lib/', 'node_modules/', 'src/shared/messages.ts', 'src/shared/messagechecks.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      // `_name`: a parameter a signature needs and the body does not (Lumino slots).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'smart'],
      curly: 'error'
    }
  },
  {
    // Short functions: one that needs more than a screen does more than one thing.
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 50, skipBlankLines: true, skipComments: true }] }
  },
  {
    // The node tests are compiled to CommonJS (tsconfig.test.json) and load some packages
    // with require(); their old disable comments name the rule's former name.
    files: ['test/**'],
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: { '@typescript-eslint/no-require-imports': 'off' }
  },
  {
    files: ['*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } }
  }
);
