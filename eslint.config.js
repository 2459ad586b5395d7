import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cache/', '.data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: { ...globals.node } } },
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // no import cycles in the service's code: a module loads only what it stands on. Type-only
    // imports count too, as a cycle through types is a cycle in the design.
    files: ['src/**/*.{ts,tsx}'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // the web console runs in the browser and renders attacker-controlled text (payloads,
    // headers, endpoint answers): only as text nodes, never through an HTML or code sink
    files: ['src/console/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: 'render API data as text, never as HTML' },
        { selector: 'MemberExpression[property.name=/^(innerHTML|outerHTML)$/]', message: 'render API data as text, never as HTML' },
        {
          selector: 'CallExpression[callee.property.name=/^(insertAdjacentHTML|write|writeln|createContextualFragment)$/]',
          message: 'no HTML sinks',
        },
        // an href is a call of routes.ts `to.*` or a prop typed Href (which only `to.*` makes)
        {
          selector:
            "JSXAttribute[name.name=/^(href|src|action|formAction)$/] > JSXExpressionContainer > :not(CallExpression[callee.object.name='to'], Identifier)",
          message: "links only to the console's own routes (routes.ts `to.*`)",
        },
        {
          selector: 'JSXAttribute[name.name=/^(href|src|action|formAction)$/] > Literal[value=/^(?!\\/console\\/|#)/]',
          message: "links only to the console's own routes",
        },
      ],
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
    },
  },
);
