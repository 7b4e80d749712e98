-- GET /api/v1/messages?queue=… with the default window (the last hour), three pages.
\timing on
select json_array_length(regina.messages_list('{"queue":"small","limit":200}') -> 'messages') as small;
select json_array_length(regina.messages_list('{"queue":"big","limit":200}') -> 'messages') as big;
select json_array_length(regina.messages_list('{"queue":"big","limit":50,"offset":1000}') -> 'messages') as big_offset;
select json_array_length(regina.messages_list('{"queue":"deep","partition":"d","limit":200}') -> 'messages') as deep_partition;
