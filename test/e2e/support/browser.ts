/**
 * A small stand-in for a browser over real HTTP: a cookie jar (tough-cookie, which applies the
 * browsers' cookie rules: `Secure`, `__Host-` prefix, `SameSite`, path and expiry) and redirects
 * followed by hand as a browser follows them (302/303 become GET). `Secure` cookies are kept on
 * http://127.0.0.1, as Chromium and Firefox keep them on loopback addresses.
 */
import { CookieJar } from 'tough-cookie';

export interface BrowserResponse {
  status: number;
  url: string;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or `undefined`. */
  body: unknown;
}

export interface BrowserRequest {
  method?: 'GET' | 'POST';
  /** A form (sent urlencoded) or JSON. */
  form?: Record<string, string>;
  json?: unknown;
  headers?: Record<string, string>;
  /** Follow redirects (default true). */
  follow?: boolean;
}

const MAX_REDIRECTS = 15;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class Browser {
  readonly jar = new CookieJar(undefined, { allowSecureOnLocal: true, prefixSecurity: 'strict' });

  /** Every URL visited by the last `request`, in order (redirect hops included). */
  visited: string[] = [];

  async request(url: string, options: BrowserRequest = {}): Promise<BrowserResponse> {
    this.visited = [];
    let current = new URL(url);
    let method = options.method ?? (options.form || options.json !== undefined ? 'POST' : 'GET');
    let body: string | undefined;
    const headers: Record<string, string> = { ...options.headers };
    if (options.form) {
      body = new URLSearchParams(options.form).toString();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    } else if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['Content-Type'] = 'application/json';
    }
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      this.visited.push(current.href);
      const cookie = await this.jar.getCookieString(current.href);
      const response = await fetch(current, {
        method,
        headers: { ...headers, ...(cookie ? { Cookie: cookie } : {}) },
        body: method === 'POST' ? body : undefined,
        redirect: 'manual',
      });
      for (const line of response.headers.getSetCookie()) {
        await this.jar.setCookie(line, current.href, { ignoreError: true });
      }
      const location = response.headers.get('location');
      if (options.follow !== false && location && [301, 302, 303, 307, 308].includes(response.status)) {
        await response.arrayBuffer();
        current = new URL(location, current);
        if (response.status === 302 || response.status === 303) {
          method = 'GET';
          body = undefined;
          delete headers['Content-Type'];
        }
        continue;
      }
      const text = await response.text();
      return { status: response.status, url: current.href, headers: response.headers, text, body: parseJson(text) };
    }
    throw new Error(`More than ${MAX_REDIRECTS} redirects from ${url}`);
  }

  /** The value of a cookie the jar would send to `url`. */
  async cookie(url: string, name: string): Promise<string | undefined> {
    return (await this.jar.getCookies(url)).find((cookie) => cookie.key === name)?.value;
  }
}

/**
 * Signs in through the service's OpenID flow: start, the provider's login form (filled in and posted
 * as a browser would), the callback. Returns the final page (the dashboard on success, the "not
 * invited" page otherwise).
 */
export async function signIn(
  browser: Browser,
  baseUrl: string,
  account: { email: string; password: string },
): Promise<BrowserResponse> {
  const form = await browser.request(`${baseUrl}/api/auth/sign-in`);
  if (form.status !== 200) throw new Error(`The sign-in page answered ${form.status}: ${form.text.slice(0, 300)}`);
  const action = /<form[^>]*method="post"[^>]*action="([^"]+)"/i.exec(form.text)?.[1];
  if (!action) throw new Error(`No login form at ${form.url}`);
  return browser.request(
    new URL(
      action.replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code))),
      form.url,
    ).href,
    {
      form: { email: account.email, password: account.password },
    },
  );
}
