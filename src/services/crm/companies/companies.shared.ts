import type { ClientApplication } from '../../../client.js'
import type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch, CompanyService } from './companies.class.js'

export type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch }
export type CompanyClientService = Pick<CompanyService, (typeof companyMethods)[number]>

export const companyPath = 'companies'
export const companyMethods: Array<keyof CompanyService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete', 'search']

export const companyClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(companyPath, connection.service(companyPath), { methods: companyMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [companyPath]: CompanyClientService
  }
}
