import { render } from 'preact';
import { CALLBACK_PATH, takeCallbackParams } from './auth/login.js';
import { Root } from './root.js';
import './styles.css';
import 'uplot/dist/uPlot.min.css';

// Before anything renders or fetches: the login answer (token or code) leaves the address bar and
// the history at once.
const callbackParams = location.pathname === CALLBACK_PATH ? takeCallbackParams() : null;

const host = document.getElementById('app');
if (host) render(<Root callbackParams={callbackParams} />, host);
