/**
 * The few HTML pages the sign-in flow ends on (the browser is navigating, not calling the API): not
 * invited, sign-in failed. Text only, escaped, nothing loaded from anywhere.
 */
import type { APIGatewayProxyResult } from 'aws-lambda';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function htmlPage(
  statusCode: number,
  title: string,
  paragraphs: string[],
  link?: { href: string; text: string },
  multiValueHeaders?: Record<string, string[]>,
): APIGatewayProxyResult {
  const body = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title></head>`,
    `<body><main><h1>${escapeHtml(title)}</h1>`,
    ...paragraphs.map((text) => `<p>${escapeHtml(text)}</p>`),
    link ? `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : '',
    '</main></body></html>',
  ].join('\n');
  return {
    statusCode,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
    },
    ...(multiValueHeaders ? { multiValueHeaders } : {}),
    body,
  };
}
