/**
 * Types for the ECR and ECR Public clients' endpoint resolvers, which direct.ts imports from the clients' ES module
 * builds (the packages publish no types for these files). The shapes are those of `EndpointParameters.d.ts` and
 * `endpointResolver.d.ts` in each client's dist-types.
 */
interface EcrEndpointParameters {
  Region?: string;
  UseFIPS?: boolean;
  UseDualStack?: boolean;
  Endpoint?: string;
}

interface ResolvedEndpoint {
  url: URL;
  properties?: Record<string, unknown>;
  headers?: Record<string, string[]>;
}

declare module '@aws-sdk/client-ecr/dist-es/endpoint/endpointResolver.js' {
  export const defaultEndpointResolver: (params: EcrEndpointParameters) => ResolvedEndpoint;
}

declare module '@aws-sdk/client-ecr-public/dist-es/endpoint/endpointResolver.js' {
  export const defaultEndpointResolver: (params: EcrEndpointParameters) => ResolvedEndpoint;
}
