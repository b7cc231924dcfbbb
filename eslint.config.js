// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.toolchain/**', '**/dist/**', 'charts/**', 'crds/**', '**/testdata/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@syncline/*/src/*', '../../*/src/*'], message: 'Import a package through its entry point.' }] },
      ],
    },
  },
  {
    // Reconcilers and controllers decide from data (a finding's cause, an error's class or code), never from the
    // text of an error or a failure: a message is for people and may be reworded (see reconcile/findings.ts).
    // String matching on what a reconciler built itself (ids, names, keys, globs) is fine; on error text it is not.
    files: [
      'packages/operator/src/{reconcile,controller,mirror,dr,remote,webhook}/**/*.ts',
      'packages/operator/src/manager.ts',
      'packages/notify/src/**/*.ts',
      'packages/runtime/src/**/*.ts',
    ],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...errorTextSelectors().map((selector) => ({
          selector,
          message: 'Decide from a cause (a Finding, an error class or code), not from the text of an error or failure.',
        })),
      ],
    },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
);

/** Selectors of string matching on error or failure text: its message or reason, or the failure lists of a target. */
function errorTextSelectors() {
  const textMethods = '/^(startsWith|endsWith|includes|match|matchAll|search|indexOf|split|replace|replaceAll|localeCompare)$/';
  const textNames = '/^(message|reason|failure|failures|conflicts|error|err|why|unreachable|f)$/';
  return [
    // error.message.includes('…'), entry.reason?.startsWith('…'), failure.split(': ')
    `CallExpression[callee.property.name=${textMethods}][callee.object.type='MemberExpression'][callee.object.property.name=${textNames}]`,
    `CallExpression[callee.property.name=${textMethods}][callee.object.type='Identifier'][callee.object.name=${textNames}]`,
    // /forbidden/i.test(message), /Timeout/.test(error.message), /x/.test(String(error))
    `CallExpression[callee.property.name='test'][arguments.0.type='Identifier'][arguments.0.name=${textNames}]`,
    `CallExpression[callee.property.name='test'][arguments.0.type='MemberExpression'][arguments.0.property.name=${textNames}]`,
    `CallExpression[callee.property.name='test'][arguments.0.type='CallExpression'][arguments.0.callee.name='String']`,
    // outcome.failures.every((f) => …): a decision over the messages; decide over outcome.findings instead
    `CallExpression[callee.property.name=/^(every|some|find|findIndex|findLast|filter)$/][callee.object.type='MemberExpression'][callee.object.property.name=/^(failures|conflicts|orphaned)$/]`,
    `CallExpression[callee.property.name=/^(every|some|find|findIndex|findLast|filter)$/][callee.object.type='Identifier'][callee.object.name=/^(failures|conflicts|orphaned)$/]`,
  ];
}
