import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../../src/dev/browser-login.js';

describe("the login page's text: every echoed value is text, never markup", () => {
  it.each([
    ['plain', 'plain'],
    ['<script>alert(1)</script>', '&#60;script&#62;alert(1)&#60;&#47;script&#62;'],
    ['"><img src=x onerror=alert(1)>', '&#34;&#62;&#60;img src&#61;x onerror&#61;alert(1)&#62;'],
    ["' autofocus onfocus='x", '&#39; autofocus onfocus&#61;&#39;x'],
    ['`${x}`', '&#96;${x}&#96;'],
    ['a&amp;b', 'a&#38;amp;b'],
    ['https://app.example/console/callback', 'https:&#47;&#47;app.example&#47;console&#47;callback'],
  ])('%j -> %j', (input, expected) => {
    expect(escapeHtml(input)).toBe(expected);
  });
});
