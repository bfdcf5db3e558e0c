let clientCount = 0;

/** A signed-out or signed-in dashboard visitor over real HTTP: keeps cookies, finds CSRF tokens in pages. */
export class DashboardClient {
  readonly baseUrl: string;
  /**
   * Each client is a browser at an address of its own (sent as X-Forwarded-For, which the app
   * believes from loopback under the default TRUST_PROXY), so the per-address limits of sign-in
   * and sign-up count one client's tries, not every test's. A request's own header overrides it.
   */
  readonly address: string;
  readonly cookies = new Map<string, string>();
  /** The `_csrf` value of the last page that had a form. */
  csrfToken = '';

  constructor(baseUrl: string, address = `2001:db8::${(++clientCount).toString(16)}`) {
    this.baseUrl = baseUrl;
    this.address = address;
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<DashboardResponse> {
    return this.request('GET', path, undefined, headers);
  }

  /** Posts the form with the current CSRF token unless the form names its own `_csrf`. */
  async post(
    path: string,
    form: Record<string, string | string[]> = {},
    headers: Record<string, string> = {},
  ): Promise<DashboardResponse> {
    const body = new URLSearchParams();
    if (!('_csrf' in form)) body.append('_csrf', this.csrfToken);
    for (const [name, value] of Object.entries(form)) for (const item of [value].flat()) body.append(name, item);
    return this.request('POST', path, body, headers);
  }

  async request(
    method: string,
    path: string,
    body: URLSearchParams | undefined,
    headers: Record<string, string>,
  ): Promise<DashboardResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      body,
      redirect: 'manual',
      headers: { 'x-forwarded-for': this.address, ...(cookie ? { cookie } : {}), ...headers },
    });
    const setCookies = response.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const isImage = response.headers.get('content-type')?.startsWith('image/');
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = isImage ? '' : bytes.toString('utf8');
    const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (token) this.csrfToken = token;
    return {
      status: response.status,
      headers: response.headers,
      setCookies,
      text,
      bytes,
      location: response.headers.get('location'),
    };
  }

  async signUp(
    email: string,
    password = 'correct horse battery',
    organisation = 'Acme Water',
  ): Promise<DashboardResponse> {
    await this.get('/dashboard/signup');
    return this.post('/dashboard/signup', { organisation, email, password });
  }

  async signIn(email: string, password: string): Promise<DashboardResponse> {
    await this.get('/dashboard/login');
    return this.post('/dashboard/login', { email, password });
  }
}

export interface DashboardResponse {
  status: number;
  headers: Headers;
  setCookies: string[];
  text: string;
  bytes: Buffer;
  location: string | null;
}
