import { toJsonSchema } from '@valibot/to-json-schema';
import { ImageRequestSchema, VideoRequestSchema } from './functions/core/validation';
console.log(JSON.stringify(toJsonSchema(ImageRequestSchema, { errorMode: 'ignore', target: 'openapi-3.0' } as never), null, 1).slice(0, 3000));
