/**
 * The AWS error codes that mean "try again" although their status may be a 4xx: the service
 * throttles, or timed out on its side. One list for the transport's signed calls
 * (transport/signed-aws-call.ts) and the AWS destinations (destinations/aws/aws-errors.ts), which
 * each add the codes of their own.
 */
export const AWS_THROTTLING_CODES: readonly string[] = [
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'KMSThrottlingException',
  'RequestTimeout',
  'RequestTimeoutException',
];
