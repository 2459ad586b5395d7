import { describe, expect, it } from 'vitest';
import { workflowSandboxOptions } from '../../../src/processes/workflow-sandbox.js';

describe('the workflow sandbox options', () => {
  it.each([
    {
      diagnostics: false,
      patched: true,
      traced: false,
      mode: 'diagnostics-off',
      options: { debugMode: true, isolateExecutionTimeout: 0, workflowStackTraces: false, lockWorkflowGlobals: true },
    },
    // the traced bundle's OpenTelemetry interceptors register a global: the SDK's full swap stays
    {
      diagnostics: false,
      patched: true,
      traced: true,
      mode: 'diagnostics-off',
      options: { debugMode: true, isolateExecutionTimeout: 0, workflowStackTraces: false, lockWorkflowGlobals: false },
    },
    // an unpatched SDK would hand Node a timeout of 0, which it refuses: the SDK's defaults stay
    { diagnostics: false, patched: false, traced: false, mode: 'diagnostics-on-unpatched-sdk', options: {} },
    { diagnostics: true, patched: true, traced: false, mode: 'diagnostics-on', options: {} },
    { diagnostics: true, patched: false, traced: true, mode: 'diagnostics-on', options: {} },
  ])('diagnostics $diagnostics, SDK patched $patched, traced $traced -> $mode', ({ diagnostics, patched, traced, mode, options }) => {
    expect(workflowSandboxOptions(diagnostics, { traced, patched })).toEqual({ mode, options });
  });
});
