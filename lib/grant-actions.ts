/**
 * The actions and key prefixes `GenerationFunction`'s `bind*` methods grant, and the bucket layout the
 * data construct shares with them.
 */

/** Key prefix of result files in the media bucket (see `mediaKey` in functions/media/port.ts). */
export const MEDIA_RESULTS_PREFIX = 'results/';

/** Key prefix of callers' uploads in the media bucket (see `uploadKey` in functions/core/uploads.ts). */
export const MEDIA_UPLOADS_PREFIX = 'uploads/';

/**
 * DynamoDB actions of read-only access: exactly what functions/store calls. No `Scan` (every access
 * path is a key or an index Query), no batch, stream or `DescribeTable` actions, which CDK's
 * `grantReadData` would add.
 */
export const TABLE_READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query'] as const;

/**
 * DynamoDB actions added for read/write access. `TransactWriteItems` is authorized per item as
 * `PutItem`, `UpdateItem` or `ConditionCheckItem`. Deleting is granted apart (`TableNeeds.deletes`).
 */
export const TABLE_WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'] as const;

/** Media actions: write results (single presigned PUTs) and read them (signed GET URLs are authorized
 * as the signer). */
export const MEDIA_ACTIONS = ['s3:PutObject', 's3:GetObject'] as const;
