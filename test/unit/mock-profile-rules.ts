// The request rules bound to the mock profile by default, for tests written before provider profiles
// (not a test file itself). The product passes the configured profile explicitly.

import * as guard from '../../functions/core/price-guard';
import { MOCK_PROFILE, type ProviderProfile } from '../../functions/core/profiles';
import * as build from '../../functions/core/provider-request';
import type { ImageRequest, VideoRequest } from '../../functions/core/validation';
import * as validation from '../../functions/core/validation';

export const validateImageRequest = (body: unknown, profile: ProviderProfile = MOCK_PROFILE): ImageRequest =>
  validation.validateImageRequest(body, profile);
export const validateVideoRequest = (body: unknown, profile: ProviderProfile = MOCK_PROFILE): VideoRequest =>
  validation.validateVideoRequest(body, profile);
export const buildImageProviderRequest = (req: ImageRequest, profile: ProviderProfile = MOCK_PROFILE) =>
  build.buildImageProviderRequest(req, profile);
export const buildVideoProviderRequest = (req: VideoRequest, profile: ProviderProfile = MOCK_PROFILE) =>
  build.buildVideoProviderRequest(req, profile);
export const guardImagePrice = (req: ImageRequest, profile: ProviderProfile = MOCK_PROFILE): void =>
  guard.guardImagePrice(req, profile);
export const guardVideoPrice = (req: VideoRequest, profile: ProviderProfile = MOCK_PROFILE): void =>
  guard.guardVideoPrice(req, profile);
