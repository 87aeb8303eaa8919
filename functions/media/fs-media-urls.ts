/**
 * The local stack's result URLs (the local gateway serves `/media/<key>`): the part of the filesystem
 * media store the API functions use, in its own module so they bundle none of the copying code.
 */
import type { MediaUrls } from './port';

/** The URL path prefix under which the local gateway serves stored media. */
export const MEDIA_URL_PREFIX = '/media/';

export interface FsMediaUrlsOptions {
  /** Base URL of the local API, e.g. `http://127.0.0.1:3000`; `urlFor` appends `/media/<key>`. */
  publicBaseUrl: string;
}

/** Creates the URL maker of the filesystem store. */
export function createFsMediaUrls(options: FsMediaUrlsOptions): MediaUrls {
  const base = options.publicBaseUrl.replace(/\/+$/, '');
  return {
    async urlFor(key: string): Promise<string> {
      return `${base}${MEDIA_URL_PREFIX}${key.split('/').map(encodeURIComponent).join('/')}`;
    },
  };
}
