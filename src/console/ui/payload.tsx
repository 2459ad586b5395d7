import { useState } from 'preact/hooks';
import { CopyButton } from './common-components.js';

type View = 'json' | 'raw' | 'base64';

function prettyJson(text: string): string | null {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

const LABEL: Record<View, string> = { json: 'Pretty JSON', raw: 'Raw text', base64: 'Base64 (binary)' };

/**
 * The stored body: pretty-printed when it is JSON, the raw text otherwise, base64 when it is not
 * UTF-8. Shown in a <pre> as a text node: whatever it contains (markup, scripts) stays text.
 */
export function Payload({ payload, encoding }: { payload: string; encoding: 'utf8' | 'base64' }) {
  const pretty = encoding === 'utf8' ? prettyJson(payload) : null;
  const views: View[] = encoding === 'base64' ? ['base64'] : pretty !== null ? ['json', 'raw'] : ['raw'];
  const [view, setView] = useState<View>(views[0] ?? 'raw');
  const text = view === 'json' && pretty !== null ? pretty : payload;
  return (
    <div class="payload">
      <div class="toolbar">
        {views.length > 1 && (
          <div class="segmented" role="group" aria-label="Payload view">
            {views.map((v) => (
              <button key={v} type="button" class="secondary" aria-pressed={view === v} onClick={() => setView(v)}>
                {LABEL[v]}
              </button>
            ))}
          </div>
        )}
        {views.length === 1 && <span class="muted">{LABEL[view]}</span>}
        <CopyButton text={text} label="Copy payload" />
      </div>
      <pre class="code-block" tabIndex={0} aria-label={`Payload, ${LABEL[view]}`}>
        {text}
      </pre>
    </div>
  );
}
