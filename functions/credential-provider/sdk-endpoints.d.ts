/**
 * Types for the SDK files direct.test.ts checks the direct calls' endpoint names against: the clients' endpoint
 * resolvers, imported from the packages' ES module builds (which publish no types for
 * them). The shapes follow each package's dist-types.
 */
interface EndpointRuleParameters {
  Region?: string;
  UseFIPS?: boolean;
  UseDualStack?: boolean;
  UseGlobalEndpoint?: boolean;
  Endpoint?: string;
}

type EndpointRules = (params: EndpointRuleParameters) => { url: URL; properties?: Record<string, unknown> };

declare module '@aws-sdk/client-ecr/dist-es/endpoint/endpointResolver.js' {
  export const defaultEndpointResolver: EndpointRules;
}

declare module '@aws-sdk/client-ecr-public/dist-es/endpoint/endpointResolver.js' {
  export const defaultEndpointResolver: EndpointRules;
}

declare module '@aws-sdk/client-sts/dist-es/endpoint/endpointResolver.js' {
  export const defaultEndpointResolver: EndpointRules;
}
