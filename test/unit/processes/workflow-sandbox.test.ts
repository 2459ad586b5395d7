import { describe, expect, it } from 'vitest';
import { workflowSandboxOptions } from '../../../src/processes/workflow-sandbox.js';

describe('the workflow sandbox options', () => {
  it.each([
    {
      diagnostics: false,
      patched: true,
      mode: 'diagnostics-off',
      options: { debugMode: true, isolateExecutionTimeout: 0, workflowStackTraces: false },
    },
    // an unpatched SDK would hand Node a timeout of 0, which it refuses: the SDK's defaults stay
    { diagnostics: false, patched: false, mode: 'diagnostics-on-unpatched-sdk', options: {} },
    { diagnostics: true, patched: true, mode: 'diagnostics-on', options: {} },
    { diagnostics: true, patched: false, mode: 'diagnostics-on', options: {} },
  ])('diagnostics $diagnostics, SDK patched $patched -> $mode', ({ diagnostics, patched, mode, options }) => {
    expect(workflowSandboxOptions(diagnostics, patched)).toEqual({ mode, options });
  });
});
