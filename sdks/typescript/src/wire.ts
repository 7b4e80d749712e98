/**
 * Wire shapes by route, read from the types generated out of the broker's OpenAPI document
 * (`openapi.ts`, written by `npm run generate`). Routes are named by method and path, as the HTTP
 * API names them, so nothing here depends on how the document names its schemas.
 */

import type { paths } from "./openapi.js";

/** A path of the HTTP API. */
export type Path = keyof paths;

/** The methods a path answers. */
export type Method<P extends Path> = {
  [M in keyof paths[P]]: paths[P][M] extends { responses: unknown } ? M : never;
}[keyof paths[P]];

/**
 * The operations `M P` names; one per path when `P` is a union of paths, so that every accessor
 * below reads each route of the union on its own.
 */
type Operation<P extends Path, M> = P extends Path ? (M extends keyof paths[P] ? paths[P][M] : never) : never;

type Json<R> = R extends { content: { "application/json": infer B } } ? B : never;

type Success<O> = O extends { responses: infer R }
  ? R extends { 200: infer Ok }
    ? Sent<Json<Ok>>
    : R extends { 201: infer Created }
      ? Sent<Json<Created>>
      : never
  : never;

/**
 * The JSON body of the success answer (`200`, else `201`) of `M P`, every field it describes
 * present (see {@link Sent}).
 */
export type Answer<P extends Path, M extends Method<P>> = Success<Operation<P, M>>;

/**
 * `T` with every property present, at every depth. The document's answer schemas list the fields
 * the broker sends without a `required` list, so the generator reads them all as optional; the
 * broker sends them all (a `null` where there is no value), and the few that some answers leave
 * out are named with {@link Optional} where the SDK names the answer. Request bodies are read as
 * the document states them.
 */
export type Sent<T> = T extends readonly unknown[]
  ? { [K in keyof T]: Sent<T[K]> }
  : T extends object
    ? { [K in keyof T]-?: Sent<T[K]> }
    : T;

type Body<O> = O extends { requestBody?: infer B } ? Json<NonNullable<B>> : never;

type Query<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The JSON request body of `M P`. */
export type RequestBody<P extends Path, M extends Method<P>> = Body<Operation<P, M>>;

/** The query parameters of `M P`. */
export type QueryParams<P extends Path, M extends Method<P>> = Query<Operation<P, M>>;

/**
 * `Sdk`, checked to be a reading of `Wire`: every value `Sdk` allows is one the document allows.
 * The SDK names its own shape where the document says less (a free-form object, `string | null`
 * where the broker never sends null, a string where the SDK lists the values); compiling fails
 * as soon as the document and the SDK disagree.
 */
export type Conform<Wire, Sdk extends Described<Wire>> = Sdk;

/**
 * `W` with its free-form objects (`{ [key: string]: unknown }`, no properties described) read as
 * any object, which an interface is too (an interface has no index signature).
 */
type Described<W> = W extends readonly (infer E)[]
  ? Described<E>[]
  : W extends object
    ? string extends keyof W
      ? object
      : { [K in keyof W]: Described<W[K]> }
    : W;

/**
 * `Sdk`, a query type of the SDK, checked to name only parameters the document lists for `Wire`
 * (the query parameters of one route, or a union of several): compiling fails on any other key.
 * Values are not compared, as the SDK takes a `Date` where the wire takes its ISO-8601 string.
 */
export type Queries<Wire, Sdk extends Listed<Wire, Sdk>> = Sdk;

type Listed<Wire, Sdk> = { [K in keyof Sdk]: K extends KeyOfEach<Wire> ? Sdk[K] : never };

/** The keys of each member of the union `T`. */
type KeyOfEach<T> = T extends unknown ? keyof T : never;

/** `T` with the properties `K` optional: fields the document lists that some answers leave out. */
export type Optional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** `T` with the properties `K` nullable: fields the document types as never null that some answers send as `null`. */
export type Nullable<T, K extends keyof T> = Omit<T, K> & { [P in K]: T[P] | null };

/** The element type of an array type. */
export type Item<T> = T extends readonly (infer E)[] ? E : never;
