/**
 * `accounts invite --aws`: the invited person's user in the deployment's Cognito user pool
 * (`USER_POOL_ID`, the stack's `UserPoolId` output). Cognito e-mails them a temporary password; the
 * e-mail address is marked verified because the operator vouches for it by inviting it.
 */
import {
  AdminCreateUserCommand,
  CognitoIdentityProviderClient,
  UsernameExistsException,
} from '@aws-sdk/client-cognito-identity-provider';
import { UsageError } from '../../functions/core/errors';

export function cognitoUserCreator(env: NodeJS.ProcessEnv): (email: string) => Promise<'created' | 'exists'> {
  const userPoolId = env.USER_POOL_ID;
  if (!userPoolId) throw new UsageError('accounts invite --aws needs USER_POOL_ID: the UserPoolId output of the stack');
  return async (email) => {
    const client = new CognitoIdentityProviderClient({});
    try {
      await client.send(
        new AdminCreateUserCommand({
          UserPoolId: userPoolId,
          Username: email,
          UserAttributes: [
            { Name: 'email', Value: email },
            { Name: 'email_verified', Value: 'true' },
          ],
          DesiredDeliveryMediums: ['EMAIL'],
        }),
      );
      return 'created';
    } catch (error) {
      if (error instanceof UsernameExistsException) return 'exists';
      throw error;
    } finally {
      client.destroy();
    }
  };
}
