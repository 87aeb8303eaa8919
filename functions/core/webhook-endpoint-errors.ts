/**
 * The errors of the webhook endpoint routes (docs/api/webhooks.md#endpoints), each with its answer, as
 * core/errors.ts does for the others (kept apart so only the endpoint functions carry them).
 */
import { DomainError } from './errors';

/** 404: no such endpoint, or another account's (indistinguishable by design). */
export class WebhookEndpointNotFoundError extends DomainError {
  override readonly name: string = 'WebhookEndpointNotFoundError';
  readonly status: number = 404;
  constructor() {
    super('Webhook endpoint not found');
  }
}

/** 404: no such delivery of this endpoint (another account's or another endpoint's included). */
export class WebhookDeliveryNotFoundError extends DomainError {
  override readonly name: string = 'WebhookDeliveryNotFoundError';
  readonly status: number = 404;
  constructor() {
    super('Webhook delivery not found');
  }
}

/** 409: the account has as many endpoints as it may (`limit`); delete one first. */
export class WebhookEndpointLimitError extends DomainError {
  override readonly name: string = 'WebhookEndpointLimitError';
  readonly status: number = 409;
  override body(): Record<string, unknown> {
    return { error: this.message, limit: this.limit };
  }
  constructor(readonly limit: number) {
    super(
      `This account already has ${limit} webhook endpoint${limit === 1 ? '' : 's'}, the most it may have; delete one first`,
    );
  }
}

/** 409: the delivery cannot be sent again now (an attempt is under way), or the endpoint is disabled. */
export class WebhookDeliveryStateError extends DomainError {
  override readonly name: string = 'WebhookDeliveryStateError';
  readonly status: number = 409;
}

/**
 * 429: the account has as many open deliveries as it may (`WEBHOOK_MAX_OPEN_DELIVERIES`): a test or a
 * redelivery would be one more. Retry once some finish.
 */
export class OpenDeliveriesFullError extends DomainError {
  override readonly name: string = 'OpenDeliveriesFullError';
  readonly status: number = 429;
  override headers(): Record<string, string> {
    return { 'Retry-After': '60' };
  }
  override body(): Record<string, unknown> {
    return { error: this.message, limit: this.limit };
  }
  constructor(readonly limit: number) {
    super(`The account already has ${limit} open webhook deliveries; retry once some finish`);
  }
}
