/**
 * Issue 27 in the stack, with settings: the uploads' lifecycle rule follows `uploadExpiryHours` (whole
 * days), the bucket gets a POST-only CORS rule for `uploadCorsOrigins`, and the uploads function is told
 * the limit and lifetime it enforces. (The default stack, the route and every grant: stack.test.ts and
 * least-privilege.test.ts.)
 */
import { cleanUp, logicalIdOf, type SynthesizedService, synthesize } from './support';

let service: SynthesizedService;

beforeAll(() => {
  service = synthesize(
    { uploadExpiryHours: 36, uploadMaxBytes: 1024 * 1024, uploadCorsOrigins: 'https://app.example.com' },
    { bundle: false },
  );
}, 180_000);

afterAll(() => {
  cleanUp(service);
});

test('the uploads settings reach the bucket and the uploads function', () => {
  // Act
  const bucket = service.template.toJSON().Resources[logicalIdOf(service, service.stack.mediaBucket)];
  const functions = service.template.findResources('AWS::Lambda::Function');
  const uploads = Object.values(functions).find(
    (fn) =>
      (fn as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment
        ?.Variables?.UPLOAD_MAX_BYTES !== undefined,
  ) as { Properties: { Environment: { Variables: Record<string, unknown> } } } | undefined;

  // Assert
  expect(bucket.Properties.LifecycleConfiguration.Rules).toContainEqual(
    expect.objectContaining({ Id: 'expire-uploads', Prefix: 'uploads/', ExpirationInDays: 2 }),
  );
  expect(bucket.Properties.CorsConfiguration).toEqual({
    CorsRules: [
      { AllowedMethods: ['POST'], AllowedOrigins: ['https://app.example.com'], AllowedHeaders: ['*'], MaxAge: 3600 },
    ],
  });
  expect(uploads?.Properties.Environment.Variables).toMatchObject({
    UPLOAD_MAX_BYTES: '1048576',
    UPLOAD_TTL_SECONDS: String(36 * 3600),
  });
});

test('uploadCorsOrigins takes https origins only', () => {
  // Act
  const synth = () => synthesize({ uploadCorsOrigins: 'http://app.example.com' }, { bundle: false });

  // Assert
  expect(synth).toThrow('uploadCorsOrigins: "http://app.example.com" is not an https origin');
});
